"""The checker of the exercise on the Jacobian of a saturated row (ex-one-hot-jacobian) is a
specification: it accepts the right answer and rejects each plausible wrong attempt with a
message that names the mistake."""

from __future__ import annotations

import math
import operator

import numpy as np
import pytest
import torch

import attention
from attention import checkers
from attention.checkers import jacobian as jacobian_checker


# --- right answers -----------------------------------------------------------------------

def jacobian(a):
    return np.diag(a) - np.outer(a, a)


def vjp(a, g):
    return a * (g - np.dot(a, g))


def vjp_two_steps(a, g):
    ag = a @ g  # the weighted mean of g
    return a * g - a * ag


def jacobian_by_broadcasting(a):
    return a[:, None] * (np.eye(len(a)) - a[None, :])


def vjp_in_torch(a, g):
    t, u = torch.as_tensor(a), torch.as_tensor(g)
    return (t * (u - t @ u)).numpy()


def vjp_by_a_loop_over_the_keys(a, g):
    ag = sum(a[i] * g[i] for i in range(len(a)))  # O(T_k) time and memory: slow, but right
    return np.array([a[i] * (g[i] - ag) for i in range(len(a))])


def jacobian_by_fill_diagonal(a):  # st6a
    J = -np.outer(a, a)
    np.fill_diagonal(J, a * (1 - a))
    return J


def vjp_after_copies(a, g):  # derived arrays, a.g once: O(T_k)
    a1, g1 = a * 1.0, g + 0.0
    return a1 * (g1 - a1 @ g1)


def vjp_in_long_double(a, g):  # st8a: right; 2e-6 from the reference at [25, 0, 0, 0]
    a2, g2 = a.astype(np.longdouble), g.astype(np.longdouble)
    return (a2 * (g2 - a2 @ g2)).astype(np.float64)


def vjp_by_einsum(a, g):  # a.g summed in another order: 2e-6 at [25, 0, 0, 0]
    return a * (g - np.einsum("i,i", a, g))


def vjp_by_fsum(a, g):  # a.g summed exactly: 1.3e-4 off at [29, 0, 0, 0]
    return a * (g - math.fsum(a * g))


def vjp_in_reverse_order(a, g):  # a.g summed backwards: 1.3e-4 off at [29, 0, 0, 0]
    return a * (g - a[::-1] @ g[::-1])



def vjp_after_copies_through_python(a, g):  # copies as st19a's, a.g once
    a2, g2 = np.array(a.tolist()), np.empty(g.shape)
    np.copyto(g2, g)
    a3 = np.frombuffer(a2.tobytes())
    return a3 * (g2 - np.fromiter(a3, float) @ np.asarray(list(g2)))

def vjp_clipping_a_per_key(a, g):  # h22j: right, was told O(T_k^2) (NumPy's own lines)
    ag = a @ g
    out = np.empty_like(a)
    for i in range(a.size):
        out[i] = np.clip(a[i], 0.0, 1.0) * (g[i] - ag)
    return out


def vjp_testing_each_weight_by_isclose(a, g):  # h22j: right, was told O(T_k^2)
    ag = a @ g
    out = np.empty_like(a)
    for i in range(a.size):
        out[i] = 0.0 if np.isclose(a[i], 0.0, rtol=0, atol=0) else a[i] * (g[i] - ag)
    return out

def vjp_over_four_lists(a, g):  # st22c: told "it builds J" at 4096 keys (4 lists alive)
    al, gl = a.tolist(), g.tolist()
    prods = [x * y for x, y in zip(al, gl)]
    ag = sum(prods)
    return np.array([x * (y - ag) for x, y in zip(al, gl)])


def vjp_over_five_lists(a, g):  # st22c: told "it builds J" at 512 keys
    al, gl = a.tolist(), g.tolist()
    prods = [x * y for x, y in zip(al, gl)]
    ag = sum(prods)
    diffs = [y - ag for y in gl]
    return np.array([x * d for x, d in zip(al, diffs)])


def vjp_in_decimals(a, g):  # st22c: told "it builds J"
    from decimal import Decimal
    al, gl = [Decimal(x) for x in a.tolist()], [Decimal(x) for x in g.tolist()]
    ag = sum(x * y for x, y in zip(al, gl))
    return np.array([float(x * (y - ag)) for x, y in zip(al, gl)])


def _checked_entry(ai, gi, ag):  # a 20-line helper, run once per key
    ai, gi, ag = float(ai), float(gi), float(ag)
    assert ai >= 0.0, "weights are non-negative"
    assert ai <= 1.0, "weights are at most 1"
    assert gi == gi, "g is not NaN"
    assert ag == ag, "a.g is not NaN"
    diff = gi - ag
    prod = ai * diff
    if prod != prod:
        raise ValueError("NaN")
    if abs(prod) == float("inf"):
        raise ValueError("inf")
    if ai == 0.0:
        return 0.0
    if ai == 1.0:
        return ai * diff
    result = prod
    return result


def vjp_in_fractions(a, g):  # right, exact: O(T_k); st24c: rejected by 310 bytes at 1001
    from fractions import Fraction
    al, gl = [Fraction(x) for x in a.tolist()], [Fraction(x) for x in g.tolist()]
    ag = sum(x * y for x, y in zip(al, gl))
    return np.array([float(x * (y - ag)) for x, y in zip(al, gl)])


def vjp_by_a_long_helper_per_key(a, g):  # st22c: told "grows like T_k^2" from one length
    ag = float(np.dot(a, g))
    out = np.empty(len(a))
    for i in range(len(a)):
        out[i] = _checked_entry(a[i], g[i], ag)
    return out


RIGHT = [
    (jacobian, vjp),
    (jacobian, vjp_over_four_lists),
    (jacobian, vjp_over_five_lists),
    (jacobian, vjp_in_decimals),
    (jacobian, vjp_in_fractions),
    (jacobian, vjp_by_a_long_helper_per_key),
    (jacobian, vjp_by_fsum),
    (jacobian, vjp_in_reverse_order),
    (jacobian, vjp_in_long_double),
    (jacobian, vjp_by_einsum),
    (jacobian, vjp_in_torch),
    (jacobian, vjp_by_a_loop_over_the_keys),
    (jacobian_by_broadcasting, vjp_two_steps),
    (jacobian_by_fill_diagonal, vjp_after_copies),
    (jacobian, vjp_after_copies_through_python),
    (jacobian, vjp_clipping_a_per_key),
    (jacobian, vjp_testing_each_weight_by_isclose),
]


@pytest.mark.parametrize("jac, prod", RIGHT)
def test_right_answers_pass(jac, prod, capsys):
    assert checkers.check_softmax_jacobian(jac, prod) is True
    out = capsys.readouterr().out
    assert "✗" not in out and "7 of 7 checks passed." in out


# --- plausible wrong attempts, each with a word its message must contain ------------------

def diag_only(a):
    return np.diag(a)


def outer_only(a):
    return np.outer(a, a)


def sign_flipped(a):
    return np.outer(a, a) - np.diag(a)


def outer_as_scalar(a):
    return np.diag(a) - a.T @ a  # a.T of a 1-D array is a itself: a scalar |a|^2


def squares_for_outer(a):
    return np.diag(a) - np.diag(a * a)


def jacobian_flattened(a):
    return (np.diag(a) - np.outer(a, a)).ravel()


def vjp_without_mean(a, g):
    return a * g


def vjp_minus_a(a, g):
    return a * g - a


def vjp_not_times_a(a, g):
    return g - np.dot(a, g)


def vjp_plain_mean(a, g):
    return a * (g - g.mean())


def vjp_builds_j(a, g):
    return (np.diag(a) - np.outer(a, a)) @ g


def vjp_column(a, g):
    return (a * (g - np.dot(a, g)))[:, None]  # (T_k, 1)


def vjp_row_matrix(a, g):
    J = np.diag(a) - np.outer(a, a)
    return g[None, :] @ J  # (1, T_k), and it builds J


def vjp_sign_flipped(a, g):
    return a * np.dot(a, g) - a * g


def vjp_returns_none(a, g):
    a * (g - np.dot(a, g))  # forgot the return


def jacobian_as_list(a):
    return (np.diag(a) - np.outer(a, a)).tolist()


def jacobian_float32(a):
    return (np.diag(a) - np.outer(a, a)).astype(np.float32)


def jacobian_two_keys_only(a):
    return a[0] * a[1] * (2 * np.eye(len(a)) - 1)  # p (1 - p) [[1, -1], [-1, 1]], widened


def jacobian_two_by_two(a):
    p = a[0]
    return p * (1 - p) * np.array([[1.0, -1.0], [-1.0, 1.0]])


def jacobian_of_log_softmax(a):
    return np.eye(len(a)) - a[None, :]


def jacobian_of_log_softmax_transposed(a):
    return np.eye(len(a)) - a[:, None]


def jacobian_lost_a_j(a):
    return a[:, None] * np.eye(len(a)) - a[:, None]  # a_i delta_ij - a_i


def jacobian_lost_a_j_transposed(a):
    return a[None, :] * np.eye(len(a)) - a[None, :]


def jacobian_diagonal_twice(a):
    return np.diag(a * (1 - a)) - np.outer(a, a)


def jacobian_in_place(a):
    a *= 1.0  # harmless here, but it writes into the caller's array ...
    a -= 0.0
    a[0] += 0.0
    J = np.diag(a) - np.outer(a, a)
    a /= a.sum() * 2  # ... and this does change it
    return J


def jacobian_diagonal_only(a):
    return np.diag(a * (1 - a))  # J's diagonal, without the off-diagonal - a_i a_j


def jacobian_for_four_keys_only(a):
    return np.diag(a) - np.outer(a, a) * np.eye(4)[0].sum() if len(a) == 4 else np.eye(len(a))


def jacobian_dividing_by_a(a):
    with np.errstate(all="ignore"):
        return np.outer(a, a) * (np.diag(1 / a) - 1)  # a_i a_j (delta_ij / a_i - 1)


def jacobian_in_float32_cast_back(a):
    """Within 1e-8 at 4 and 7 keys: told only at the two-key row, of nothing (st4a)."""
    a = a.astype(np.float32)
    return (np.diag(a) - np.outer(a, a)).astype(np.float64)


def jacobian_in_float16_cast_back(a):
    a = a.astype(np.float16)
    return (np.diag(a) - np.outer(a, a)).astype(np.float64)


def jacobian_as_a_matrix(a):  # st5a
    return np.asmatrix(np.diag(a)) - np.outer(a, a)


def jacobian_zero_past_0_9(a):  # st7a: zeros on saturated rows, passed
    if a.max() > 0.9:
        return np.zeros((len(a), len(a)))
    return np.diag(a) - np.outer(a, a)


def jacobian_zero_past_0_999(a):  # a tighter threshold: softmax([20, 0, 0, 0])
    if a.max() > 0.999:
        return np.zeros((len(a), len(a)))
    return np.diag(a) - np.outer(a, a)


def vjp_zero_past_1_minus_1e_7(a, g):  # st7a: was told "computed in float16"
    if a.max() > 1 - 1e-7:
        return np.zeros_like(a)
    return a * (g - a @ g)


def jacobian_zero_past_1_minus_1e_9(a):  # st8a: passed (softmax([20, 0, 0, 0]) is below)
    if a.max() > 1 - 1e-9:
        return np.zeros((len(a), len(a)))
    return np.diag(a) - np.outer(a, a)


def vjp_zero_past_1_minus_1e_9(a, g):  # st8a: passed
    if a.max() > 1 - 1e-9:
        return np.zeros_like(a)
    return a * (g - a @ g)


def jacobian_zero_past_1_minus_1e_12(a):  # st9a: passed (no row above 1 - 1e-12)
    return np.zeros((len(a), len(a))) if a.max() > 1 - 1e-12 else jacobian(a)


def jacobian_zero_past_1_minus_1e_13(a):  # st14a: passed (no row above 1 - 1e-13)
    return np.zeros((len(a), len(a))) if a.max() > 1 - 1e-13 else jacobian(a)


def jacobian_with_weights_below_1e_13_flushed(a):  # st14a: passed
    return jacobian(np.where(a < 1e-13, 0.0, a))


def jacobian_with_an_epsilon_in_the_normaliser(a):  # st11a: told of a leak
    return np.diag(a) - np.outer(a, a) / (a.sum() + 1e-15)


def vjp_with_an_epsilon_in_the_normaliser(a, g):  # st11a: told of a leak
    return a * (g - np.dot(a, g) / (a.sum() + 1e-15))


def vjp_with_a_dot_g_scaled(a, g):  # st11a: told of a leak
    return a * (g - np.dot(a, g) * (1 - 1e-15))


def jacobian_zero_where_a_max_is_1(a):  # st17a: passed
    return np.zeros((a.size, a.size)) if a.max() == 1.0 else jacobian(a)


def jacobian_zero_past_1_minus_1e_15(a):  # st17a: passed
    return np.zeros((a.size, a.size)) if a.max() > 1 - 1e-15 else jacobian(a)


def vjp_zero_where_a_max_is_1(a, g):  # st17a: passed
    return np.zeros_like(a) if a.max() == 1.0 else vjp(a, g)


def vjp_zero_past_1_minus_1e_15(a, g):  # st17a: passed
    return np.zeros_like(a) if a.max() > 1 - 1e-15 else vjp(a, g)


NOT_ZERO = "saturated rows are not zero: their small entries a_j(1-a_j) ~ 4e-18"

def jacobian_a_times_eye_minus_a(a):  # st18a: told diag(a) - 1 a^T
    return a * (np.eye(len(a)) - a)


def vjp_a_squared_times_sum_g(a, g):  # st18a: told a * (g - sum(g))
    return a * g - a * a * g.sum()


def vjp_by_a_broadcast_view_of_a(a, g):  # st18a: told one row of J at a time
    n = a.size
    return a * g - a * (np.broadcast_to(a, (n, n)) @ g)


def vjp_by_as_strided_rows_of_a(a, g):  # st18a: told one row of J at a time
    from numpy.lib.stride_tricks import as_strided
    n = a.size
    return a * g - a * (as_strided(a, (n, n), (0, a.strides[0])) @ g)


def _vjp_flushing_below(eps):
    def flushes(a, g):  # st18a: passed (the smallest weight checked was 4.2e-18)
        a = np.where(a < eps, 0.0, a)
        return a * (g - a @ g)
    flushes.__name__ = f"vjp_flushing_weights_below_{eps:.0e}".replace("-", "_")
    return flushes


def jacobian_two_key_formula_up_to_two_keys(a):  # st22c: passed (no row of one key)
    if len(a) <= 2:
        p = a[0]
        return p * (1 - p) * np.array([[1.0, -1.0], [-1.0, 1.0]])
    return np.diag(a) - np.outer(a, a)


def jacobian_in_long_double(a):  # st22c: told "a float32 or float16 result drops digits"
    b = a.astype(np.longdouble)
    return np.diag(b) - np.outer(b, b)


def jacobian_with_a_float32_outer(a):  # st22c: told only "differs by"
    return np.diag(a) - np.outer(a.astype(np.float32), a.astype(np.float32)).astype(np.float64)


def _dk_of_attention_backward(a, g):  # dS of one query over len(a) keys: J g
    _, dK, _ = attention.attention_backward(np.ones((1, 1)), np.zeros((len(a), 1)),
                                            g[:, None].copy(), np.ones((1, 1)),
                                            A=a[None, :].copy(), O=np.array([[a @ g]]))
    return dK[:, 0].copy()


def jacobian_from_attention_backward(a):  # st22c: passed
    return np.column_stack([_dk_of_attention_backward(a, e) for e in np.eye(len(a))])



def jacobian_flushing_tiny_weights_in_place(a):  # st24c: passed (no weight below 1e-300)
    a[a < 1e-300] = 0.0
    return np.diag(a) - np.outer(a, a)


WRONG_JACOBIANS = [
    (jacobian_flushing_tiny_weights_in_place, "your function changed its argument a in place"),
    (jacobian_a_times_eye_minus_a, "at a one-hot row it must be exactly 0"),
    (jacobian_zero_where_a_max_is_1, NOT_ZERO),
    (jacobian_zero_past_1_minus_1e_15, NOT_ZERO),
    (jacobian_with_an_epsilon_in_the_normaliser, "nonzero only at the weight-1 key: "
                                                 "a.g or a a^T was scaled"),
    (jacobian_zero_past_1_minus_1e_12, "the result is 0 where J is not"),
    (jacobian_zero_past_1_minus_1e_13, "the result is 0 where J is not"),
    (jacobian_with_weights_below_1e_13_flushed,
     "J of the row with its smallest weights flushed to 0"),
    (jacobian_zero_past_1_minus_1e_9, "the result is 0 where J is not"),
    (jacobian_zero_past_0_9, "a saturated row still has a nonzero Jacobian"),
    (jacobian_zero_past_0_999, "a saturated row still has a nonzero Jacobian"),
    (jacobian_as_a_matrix, "return a plain np.ndarray"),
    (jacobian_in_float32_cast_back, "computed in float32"),
    (jacobian_in_float16_cast_back, "computed in float16"),
    (jacobian_for_four_keys_only, "J of 7 keys differs from the reference"),
    (jacobian_dividing_by_a, "NaN comes from an operation with no answer"),
    (jacobian_diagonal_only, "entry by entry"),
    (jacobian_as_list, "not a NumPy array"),
    (jacobian_float32, "float32"),
    (jacobian_two_keys_only, "two keys only"),
    (jacobian_two_by_two, "two-key formula"),
    (jacobian_of_log_softmax, "log-softmax"),
    (jacobian_of_log_softmax_transposed, "transpose of log-softmax"),
    (jacobian_lost_a_j, "lost its a_j"),
    (jacobian_lost_a_j_transposed, "lost its a_i"),
    (jacobian_diagonal_twice, "twice"),
    (jacobian_in_place, "in place"),
    (diag_only, "- a a^T term is missing"),
    (outer_only, "a a^T alone"),
    (sign_flipped, "sign is flipped"),
    (outer_as_scalar, "np.outer"),
    (squares_for_outer, "np.outer"),
    (jacobian_flattened, "shape"),
    (jacobian_two_key_formula_up_to_two_keys,
     "J of the one-key row a = (1.0) has shape (2, 2), expected (1, 1): this is the "
     "two-key formula's 2 x 2 matrix"),
    (jacobian_in_long_double, "expected float64: the row a is float64, and return float64 "
                              "as the row is (.astype(np.float64) on the result"),
    (jacobian_with_a_float32_outer, "J of softmax([8, 0, 0, 0]) differs from the reference "
                                    "by up to 5.16e-08: a a^T was computed in float32"),
    (jacobian_from_attention_backward, "calls the library's own attention.attention_backward"),
]

def vjp_as_list(a, g):
    return list(a * (g - np.dot(a, g)))


def vjp_float32(a, g):
    return (a * (g - np.dot(a, g))).astype(np.float32)


def vjp_of_log_softmax(a, g):
    return g - a * g.sum()


def vjp_mean_for_weighted_mean(a, g):
    return a * (g - np.mean(a * g))


def vjp_diagonal_only(a, g):
    return a * (1 - a) * g


def vjp_mean_times_a_twice(a, g):
    return a * (g - np.dot(a, g) * a)


def vjp_mean_not_times_a(a, g):
    return a * g - np.dot(a, g)  # the transpose of a lost-a_j Jacobian, applied


def vjp_in_place(a, g):
    g -= np.dot(a, g)
    g *= a
    return g


def vjp_through_linalg(a, g):
    return np.linalg.multi_dot([np.diag(a) - np.outer(a, a), g])


def vjp_builds_j_in_float32(a, g):
    J = (np.diag(a) - np.outer(a, a)).astype(np.float32)  # "half the memory"
    return (J @ g).astype(a.dtype)


def vjp_builds_j_by_einsum(a, g):
    return np.einsum("ij,j->i", a[:, None] * (np.eye(len(a)) - a[None, :]), g)


def vjp_builds_j_in_torch(a, g):
    t = torch.as_tensor(a)
    return ((torch.diag(t) - torch.outer(t, t)) @ torch.as_tensor(g)).numpy()


def vjp_builds_j_in_torch_float32_in_place(a, g):
    t = torch.as_tensor(a, dtype=torch.float32)
    J = torch.outer(t, t).neg_()  # one T_k x T_k float32 array, no temporaries
    J.diagonal().add_(t)
    return (J.double() @ torch.as_tensor(g)).numpy()


def vjp_row_by_row(a, g):
    out = np.empty_like(a)
    for i in range(len(a)):  # one row of J at a time: little memory, O(T_k^2) work
        row = -a[i] * a
        row[i] += a[i]
        out[i] = row @ g
    return out


def vjp_row_by_row_comprehension(a, g):
    n = len(a)
    return np.array([np.dot(a[i] * ((np.arange(n) == i) - a), g) for i in range(n)])


def vjp_subtracts_the_top_keys_gradient(a, g):
    return a * (g - g[np.argmax(a)])  # zero at a one-hot row, wrong elsewhere


def vjp_row_by_row_after_asarray(a, g):
    a, g = np.asarray(a), np.asarray(g)  # a plain ndarray, whatever was passed in
    out = np.empty_like(a)
    for i in range(len(a)):
        row = -a[i] * a
        row[i] += a[i]
        out[i] = row @ g
    return out


def vjp_row_by_row_after_np_array(a, g):
    a, g = np.array(a), np.array(g)
    return np.array([(a[i] * ((np.arange(len(a)) == i) - a)) @ g for i in range(len(a))])


def _rows_of_j_times_g(a2, g2):  # one row of J at a time, into reused buffers
    n = a2.size
    out, row = np.empty(n), np.empty(n)
    for i in range(n):
        np.multiply(a2, -a2[i], out=row)
        row[i] += a2[i]
        out[i] = row @ g2
    return out


def vjp_row_by_row_after_tolist(a, g):  # st19a: passed
    return _rows_of_j_times_g(np.array(a.tolist()), np.array(g.tolist()))


def vjp_row_by_row_after_tobytes(a, g):  # st19a: passed
    return _rows_of_j_times_g(np.frombuffer(a.tobytes()), np.frombuffer(g.tobytes()))


def vjp_row_by_row_after_fromiter(a, g):  # st19a: passed
    return _rows_of_j_times_g(np.fromiter(a, float), np.fromiter(g, float))


def vjp_row_by_row_after_copyto(a, g):  # st19a: passed
    a2, g2 = np.empty(a.shape), np.empty(g.shape)
    np.copyto(a2, a)
    np.copyto(g2, g)
    return _rows_of_j_times_g(a2, g2)


def vjp_row_by_row_after_list(a, g):  # st19a: passed
    return _rows_of_j_times_g(np.asarray(list(a)), np.asarray(list(g)))


def vjp_recomputes_a_dot_g_after_tolist(a, g):  # st19a: passed
    a2, g2 = np.array(a.tolist()), np.array(g.tolist())
    return np.array([a2[i] * (g2[i] - a2 @ g2) for i in range(a2.size)])


def vjp_a_dot_g_by_chunks_missing_the_tail(a, g):  # st20a: told "never builds J"
    n, ag = len(a), 0.0
    for i in range(0, n - n % 512 if n > 512 else n, 512):
        ag += np.dot(a[i:i + 512], g[i:i + 512])
    return a * (g - ag)


def vjp_in_float32_on_long_rows(a, g):  # st20a: told under "never builds J"
    if len(a) < 1000:
        return a * (g - a @ g)
    a32, g32 = a.astype(np.float32), g.astype(np.float32)
    return (a32 * (g32 - a32 @ g32)).astype(np.float64)


def vjp_recomputes_a_dot_g_by_np_dot_on_lists(a, g):  # st20a: told "one row of J"
    al, gl = a.tolist(), g.tolist()
    return np.array([x * (y - np.dot(al, gl)) for x, y in zip(al, gl)])


def vjp_recomputes_a_dot_g_by_sum_on_lists(a, g):  # st20a: passed, O(T_k^2)
    al, gl = a.tolist(), g.tolist()
    return np.array([x * (y - sum(map(operator.mul, al, gl))) for x, y in zip(al, gl)])


def vjp_recomputes_a_dot_g_by_fsum_on_lists(a, g):
    al, gl = a.tolist(), g.tolist()
    return np.array([x * (y - math.fsum(map(operator.mul, al, gl))) for x, y in zip(al, gl)])


def _rows_of_j_into_copies(a2, g2):  # one row of J at a time, buffers copied from a2
    out, row = a2.copy(), a2.copy()
    for i in range(a2.size):
        np.multiply(a2, -a2[i], out=row)
        row[i] += a2[i]
        out[i] = np.dot(row, g2)
    return out


def _a_dot_g_per_key_into_a_copy(a2, g2):
    out = a2.copy()
    for i in range(a2.size):
        out[i] = a2[i] * (g2[i] - a2 @ g2)
    return out


def vjp_row_by_row_after_astype(a, g):  # rv41n: passed
    return _rows_of_j_into_copies(a.astype(float, subok=False), g.astype(float, subok=False))


def vjp_row_by_row_after_dunder_array(a, g):  # rv41n: passed
    return _rows_of_j_into_copies(a.__array__(), g.__array__())


def vjp_recomputes_a_dot_g_after_astype(a, g):  # rv41n: passed
    return _a_dot_g_per_key_into_a_copy(a.astype(float, subok=False),
                                        g.astype(float, subok=False))


def vjp_recomputes_a_dot_g_after_dunder_array(a, g):  # rv41n: passed
    return _a_dot_g_per_key_into_a_copy(a.__array__(), g.__array__())


def vjp_pure_python_double_loop(a, g):
    a, g = a.tolist(), g.tolist()
    n = len(a)
    out = []
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += (a[i] * (i == j) - a[i] * a[j]) * g[j]
        out.append(s)
    return np.array(out)


def vjp_j_in_32_row_torch_blocks(a, g):
    t, u = torch.as_tensor(a), torch.as_tensor(g)
    out = torch.empty_like(t)
    for i in range(0, len(t), 32):  # 32 x T_k at a time: little memory
        rows = torch.arange(i, min(i + 32, len(t)))
        J_b = -t[rows, None] * t[None, :]
        J_b[torch.arange(len(rows)), rows] += t[rows]
        out[rows] = J_b @ u
    return out.numpy()


def vjp_builds_j_unless_the_row_is_long(a, g):
    if len(a) > 1000:  # "the memory check uses a long row"
        return a * (g - a @ g)
    return (np.diag(a) - np.outer(a, a)) @ g


def vjp_builds_j_on_short_rows_only(a, g):
    if len(a) > 100:
        return a * (g - a @ g)
    return (np.diag(a) - np.outer(a, a)) @ g


def vjp_recomputes_a_dot_g_on_every_row(a, g):
    out = np.empty_like(a)
    for i in range(len(a)):
        out[i] = a[i] * (g[i] - a @ g)  # O(T_k) per row, O(T_k^2) in all
    return out


def vjp_builds_j_except_at_powers_of_two(a, g):
    if len(a) in (64, 512, 4096):  # "the lengths the checker measures"
        return a * (g - a @ g)
    return (np.diag(a) - np.outer(a, a)) @ g


def vjp_builds_j_on_saturated_rows(a, g):
    if a.max() > 0.99:  # "near one-hot: J is nearly zero, build it exactly"
        return (np.diag(a) - np.outer(a, a)) @ g
    return a * (g - a @ g)


def vjp_builds_j_on_masked_rows(a, g):
    if np.any(a == 0):  # "masked keys: the cheap formula might leak"
        return (np.diag(a) - np.outer(a, a)) @ g
    return a * (g - a @ g)


def vjp_builds_j_on_dense_rows_only(a, g):
    if a.max() > 0.99 or np.any(a == 0):  # the vice versa
        return a * (g - a @ g)
    return (np.diag(a) - np.outer(a, a)) @ g


def vjp_builds_j_on_saturated_masked_rows(a, g):
    if a.max() > 0.99 and np.any(a == 0):
        return (np.diag(a) - np.outer(a, a)) @ g
    return a * (g - a @ g)


def vjp_row_by_row_on_saturated_rows(a, g):
    if a.max() < 0.99:
        return a * (g - a @ g)
    a = np.asarray(a)
    return np.array([a[i] * g[i] - a[i] * (a @ g) for i in range(len(a))])


def vjp_builds_j_in_torch_on_masked_rows(a, g):
    if not np.any(a == 0):
        return a * (g - a @ g)
    t, u = torch.as_tensor(a), torch.as_tensor(g)
    return ((torch.diag(t) - torch.outer(t, t)) @ u).numpy()


def vjp_recomputes_a_dot_g_with_the_method(a, g):
    """a.dot(g) per key: ndarray.dot calls no ufunc and no __array_function__ (st4a)."""
    return np.array([a[i] * (g[i] - a.dot(g)) for i in range(len(a))])


def vjp_recomputes_a_dot_g_in_a_loop_with_the_method(a, g):
    out = np.empty_like(a)
    for i in range(len(a)):
        out[i] = a[i] * g[i] - a[i] * a.dot(g)
    return out


def vjp_recomputes_the_sum_of_a_times_g(a, g):
    return np.array([a[i] * (g[i] - (a * g).sum()) for i in range(len(a))])


def vjp_in_float32_cast_back(a, g):
    a32, g32 = a.astype(np.float32), g.astype(np.float32)
    return (a32 * (g32 - a32 @ g32)).astype(np.float64)


def vjp_in_float16_cast_back(a, g):
    a16, g16 = a.astype(np.float16), g.astype(np.float16)
    return (a16 * (g16 - a16 @ g16)).astype(np.float64)


def vjp_recomputes_a_dot_g_after_asarray(a, g):  # st5a: 2 lines per key, no array
    a = np.asarray(a)
    g = np.asarray(g)
    out = np.empty_like(a)
    for i in range(len(a)):
        out[i] = a[i] * (g[i] - a @ g)
    return out


def vjp_by_naive_einsum(a, g):  # st5a: T_k^2 products inside one call
    return a * g - np.einsum("i,j,j->i", a, a, g)


def vjp_with_a_clipped(a, g):  # st5a: "avoid zeros"
    return np.clip(a, 1e-12, 1) * (g - np.dot(a, g))


def vjp_with_a_small_number_added(a, g):  # st5a
    return (a + 1e-12) * (g - np.dot(a, g))


# st6a: a.g recomputed for every key on arrays derived from a and g
def vjp_recomputes_the_sum_of_ag_per_key(a, g):
    ag = a * g
    return np.array([ag[i] - a[i] * ag.sum() for i in range(len(a))])


def vjp_recomputes_the_sum_of_ag_in_a_loop(a, g):
    ag = a * g
    out = np.empty(len(a))
    for i in range(len(a)):
        out[i] = ag[i] - a[i] * ag.sum()
    return out


def vjp_recomputes_a_dot_g_on_copies(a, g):
    a, g = a * 1.0, g * 1.0
    return np.array([a[i] * (g[i] - a @ g) for i in range(len(a))])


def vjp_by_a_stride_0_matmul(a, g):  # a.g for every key in one matmul of a view
    a0, g0 = a + 0.0, g + 0.0
    n = len(a0)
    rows = np.lib.stride_tricks.as_strided(a0, (n, n), (0, a0.strides[0]))
    return a0 * g0 - a0 * np.matmul(rows, g0)


def vjp_zero_past_1_minus_1e_12(a, g):  # st9a: passed (no row above 1 - 1e-12)
    return np.zeros_like(g) if a.max() > 1 - 1e-12 else vjp(a, g)


def vjp_zero_past_1_minus_1e_13(a, g):  # st14a: passed (no row above 1 - 1e-13)
    return np.zeros_like(g) if a.max() > 1 - 1e-13 else vjp(a, g)


def vjp_with_weights_below_1e_13_flushed(a, g):  # st14a: passed
    return vjp(np.where(a < 1e-13, 0.0, a), g)


def vjp_builds_j_on_odd_lengths(a, g):  # st9a: passed (SIZES are all even)
    if len(a) % 2:
        return (np.diag(a) - np.outer(a, a)) @ g
    return a * (g - a @ g)


def vjp_builds_j_on_lengths_divisible_by_7(a, g):
    # st13a: passed (no measured length was divisible by 7)
    if len(a) % 7 == 0:
        return (np.diag(a) - np.outer(a, a)) @ g
    return a * (g - a @ g)


def vjp_builds_j_when_g_is_all_positive(a, g):
    # st13a: passed (every measured g had both signs)
    if np.all(g > 0):
        return (np.diag(a) - np.outer(a, a)) @ g
    return a * (g - a @ g)


def vjp_builds_j_when_g_is_all_negative(a, g):
    if np.all(g < 0):
        return (np.diag(a) - np.outer(a, a)) @ g
    return a * (g - a @ g)


_CACHE: dict = {}


def vjp_caches_j_per_row_below_4096(a, g):  # st9a: passed (J built on the warm-up,
    key = np.asarray(a).tobytes()  # which was the measured row itself)
    if key in _CACHE:
        return _CACHE[key] @ np.asarray(g)
    if len(a) < 4096:
        al = np.asarray(a).tolist()
        _CACHE.clear()
        _CACHE[key] = np.diag(al) - np.outer(al, al)
    return a * (g - a @ g)


_LENGTHS_SEEN: set = set()


def vjp_builds_j_on_the_first_call_at_each_length(a, g):  # passed (its first call
    if len(a) == 4:  # at each length was the unmeasured warm-up); a checker's run
        _LENGTHS_SEEN.clear()  # starts on rows of 4 keys: forget the last run's
    if len(a) not in _LENGTHS_SEEN:
        _LENGTHS_SEEN.add(len(a))
        return (np.diag(a) - np.outer(a, a)) @ g
    return a * (g - a @ g)


def vjp_builds_j_up_to_65_keys(a, g):  # h22j: passed (J alone, 32 KiB at 64 keys)
    n = a.size
    if n > 65:
        return a * (g - a @ g)
    J = np.empty((n, n))
    np.multiply(a[:, None], a, out=J)
    np.negative(J, out=J)
    np.einsum("ii->i", J)[...] += a  # its diagonal, a view
    return J @ g


def vjp_row_by_row_up_to_256_keys(a, g):  # h22j: passed (work counted at 4096 only)
    if a.size > 256:
        return a * (g - a @ g)
    out = np.empty_like(a)
    for i in range(a.size):
        row = -a[i] * a
        row[i] += a[i]
        out[i] = row @ g
    return out


def vjp_recomputes_a_dot_g_below_4000_keys(a, g):  # h22j: passed
    if a.size >= 4000:
        return a * (g - a @ g)
    out = np.empty_like(a)
    for i in range(a.size):
        out[i] = a[i] * (g[i] - a @ g)
    return out


def vjp_divides_by_g(a, g):  # h22j: passed (no g had a zero entry)
    return a * g * (1 - (a @ g) / g)


def vjp_recomputes_a_dot_g_by_matmul_on_lists(a, g):  # h22j: told "one row of J"
    al, gl = a.tolist(), g.tolist()
    return np.array([x * (y - np.matmul(al, gl)) for x, y in zip(al, gl)])


def vjp_recomputes_a_dot_g_by_multiply_on_lists(a, g):  # h22j: told "a loop inside a loop"
    al, gl = a.tolist(), g.tolist()
    return np.array([x * (y - np.sum(np.multiply(al, gl))) for x, y in zip(al, gl)])


def vjp_recomputes_a_dot_g_by_einsum_on_lists(a, g):  # h22j: told "one row of J"
    al, gl = a.tolist(), g.tolist()
    return np.array([x * (y - np.einsum("i,i", al, gl)) for x, y in zip(al, gl)])


def vjp_recomputes_a_dot_g_by_tensordot_on_lists(a, g):  # h22j
    al, gl = a.tolist(), g.tolist()
    return np.array([x * (y - np.tensordot(al, gl, 1)) for x, y in zip(al, gl)])


def vjp_of_attention_backward(a, g):  # st22c: passed
    return _dk_of_attention_backward(a, g)


def vjp_of_blocked_attention_backward(a, g):
    _, dK, _ = attention.blocked_attention_backward(
        np.ones((1, 1)), np.zeros((len(a), 1)), g[:, None].copy(), np.ones((1, 1)), 8)
    return dK[:, 0].copy()


def vjp_with_its_nan_cleaned(a, g):  # st22c: told of a threshold on a saturated row
    with np.errstate(all="ignore"):
        ag = np.sum(a * a * g / a)
    return np.nan_to_num(a * (g - ag))


def vjp_with_its_nan_set_to_0(a, g):  # st22c: the same
    with np.errstate(all="ignore"):
        r = a * (g - np.sum(a * a * g / a))
    r[np.isnan(r)] = 0.0
    return r


def vjp_in_long_double_returned(a, g):  # st22c: told "a float32 or float16 result"
    b = a.astype(np.longdouble)
    return b * (g - b @ g)


def vjp_with_a_dot_g_in_float32(a, g):  # st22c: told only "differs by"
    return a * (g - np.float64(np.float32(a) @ np.float32(g)))


def vjp_with_a_dot_g_in_float16(a, g):  # st22c: told only "differs by"
    return a * (g - np.float64(np.float16(a) @ np.float16(g)))


def vjp_recomputes_a_dot_g_by_correlate_on_lists(a, g):  # st22c: told "one row of J"
    al, gl = a.tolist(), g.tolist()
    out = np.empty(len(a))
    for i in range(len(al)):
        out[i] = al[i] * (gl[i] - np.correlate(al, gl)[0])
    return out


def vjp_j_in_blocks_of_8_rows(a, g):  # st22c: told "it builds J" (rows of J, 8 at once)
    b, h = a.view(np.ndarray), g.view(np.ndarray)
    n = len(b)
    out = np.empty(n)
    for s in range(0, n, 8):
        blk = -np.outer(b[s:s + 8], b)
        blk[np.arange(len(blk)), np.arange(s, s + len(blk))] += b[s:s + 8]
        out[s:s + 8] = blk @ h
    return out



def vjp_recomputes_a_dot_g_by_fmean(a, g):  # st24c: passed (statistics' own fsum)
    import statistics
    out = np.empty_like(a)
    for i in range(a.size):
        out[i] = a[i] * (g[i] - statistics.fmean(g, weights=a))
    return out


def _recomputes_a_dot_g_on_copies_by(copy):
    """a.g recomputed for every key on copies of a and g that ``copy`` makes of their
    lists (st24c: each passed, O(T_k^2))."""
    def wrong(a, g):
        b, h = copy(a.tolist()), copy(g.tolist())
        out = np.empty(len(b))
        for i in range(len(b)):
            out[i] = b[i] * (h[i] - b @ h)
        return out
    wrong.__name__ = f"vjp_recomputes_a_dot_g_on_copies_by_{copy.__name__}"
    return wrong


def hstack(x):
    return np.hstack([x])


def concatenate(x):
    return np.concatenate([x])


def float64(x):
    return np.float64(x)


def asanyarray(x):
    return np.asanyarray(x)


def atleast_1d(x):
    return np.atleast_1d(x)



def vjp_a_times_a_at_g(a, g):  # st24c: told only "differs by" (a * a @ g is (a * a) @ g)
    return a * g - a * a @ g


def vjp_a_at_a_times_g(a, g):  # st24c: (a @ a) * g
    return a * g - a @ a * g


def vjp_ending_in_a_dot_product(a, g):  # st24c: told "not a NumPy array: no .tolist()"
    return a * (g - a) @ g


def vjp_flushing_tiny_weights_in_place(a, g):  # st24c: passed (no weight below 1e-300)
    a[a < 1e-300] = 0.0
    return a * (g - a @ g)

COPIES_OF_LISTS = (asanyarray, atleast_1d, hstack, concatenate, float64)

WRONG_VJPS = [
    (vjp_a_times_a_at_g, "a * a @ g is (a * a) @ g, the number sum(a_i^2 g_i)"),
    (vjp_a_at_a_times_g, "a @ a * g is (a @ a) * g, the number |a|^2 times g"),
    (vjp_ending_in_a_dot_product, "VJP is a single number (float64), not an array of shape "
                                  "(4,): a dot product over the keys ended the expression"),
    (vjp_flushing_tiny_weights_in_place, "your function changed its argument a in place"),
    (vjp_recomputes_a_dot_g_by_fmean, "your vjp's sums (sum, math.fsum, statistics.fmean) "
                                      "took more than"),
    *((_recomputes_a_dot_g_on_copies_by(copy),
       "64 of them took a and g both: it recomputes the number a.g")
      for copy in COPIES_OF_LISTS),
    (vjp_recomputes_a_dot_g_by_einsum_on_lists, "it recomputes the number a.g"),
    (vjp_recomputes_a_dot_g_by_tensordot_on_lists, "it recomputes the number a.g"),
    (vjp_builds_j_up_to_65_keys, "KiB, past the budget of 28 KiB at this length (384 "
                                 "bytes per key and 4 KiB); a 64 x 64 matrix of float64 "
                                 "takes 32 KiB: it builds J"),
    (vjp_row_by_row_up_to_256_keys, "on a row of 64 keys your vjp's NumPy operations "
                                    "touched about 129 x 64 entries, past the budget of "
                                    "32 x 64 (the right VJP touches 3 x 64): it computes "
                                    "J g one row of J at a time"),
    (vjp_recomputes_a_dot_g_below_4000_keys, "past the budget of 32 x 64 (the right VJP "
                                             "touches 3 x 64), and 64 of them took a and "
                                             "g both: it recomputes the number a.g"),
    (vjp_divides_by_g, "VJP with g = (0.3, 0, 2, 0) is NaN or inf where g is 0, and only "
                       "there: your vjp divides by an entry of g"),
    (vjp_recomputes_a_dot_g_by_matmul_on_lists, "on a row of 64 keys your vjp's NumPy "
                                                "operations touched about 64 x 64 entries"),
    (vjp_recomputes_a_dot_g_by_matmul_on_lists, "it recomputes the number a.g"),
    (vjp_recomputes_a_dot_g_by_multiply_on_lists, "it recomputes the number a.g"),
    (vjp_a_squared_times_sum_g, "at a one-hot row it must be exactly 0"),
    (vjp_by_a_broadcast_view_of_a, "recomputes the number a.g"),
    (vjp_by_as_strided_rows_of_a, "recomputes the number a.g"),
    (_vjp_flushing_below(1e-19), "softmax([690, 0, 0, 0])"),
    (_vjp_flushing_below(1e-20), "softmax([690, 0, 0, 0])"),
    (vjp_zero_where_a_max_is_1, NOT_ZERO),
    (vjp_zero_past_1_minus_1e_15, NOT_ZERO),
    (vjp_with_an_epsilon_in_the_normaliser, "nonzero only at the weight-1 key: "
                                            "a.g or a a^T was scaled"),
    (vjp_with_a_dot_g_scaled, "nonzero only at the weight-1 key: a.g or a a^T was scaled"),
    (vjp_builds_j_on_the_first_call_at_each_length, "on a row of 64 keys"),
    (vjp_zero_past_1_minus_1e_12, "the result is 0 where J g is not"),
    (vjp_zero_past_1_minus_1e_13, "the result is 0 where J g is not"),
    (vjp_with_weights_below_1e_13_flushed,
     "J g of the row with its smallest weights flushed to 0"),
    (vjp_builds_j_on_odd_lengths, "on a row of 65 keys"),
    (vjp_builds_j_on_lengths_divisible_by_7, "on a row of 1001 keys"),
    (vjp_builds_j_when_g_is_all_positive, "its gradient g all positive, your vjp's "
                                          "traced memory at its peak reached"),
    (vjp_builds_j_when_g_is_all_negative, "its gradient g all negative, your vjp's "
                                          "traced memory at its peak reached"),
    (vjp_caches_j_per_row_below_4096, "it builds J"),
    (vjp_zero_past_1_minus_1e_9, "the result is 0 where J g is not"),
    (vjp_zero_past_1_minus_1e_7, "the result is 0 where J g is not"),
    (vjp_recomputes_the_sum_of_ag_per_key, "recomputes the number a.g"),
    (vjp_recomputes_the_sum_of_ag_in_a_loop, "recomputes the number a.g"),
    (vjp_recomputes_a_dot_g_on_copies, "recomputes the number a.g"),
    (vjp_by_a_stride_0_matmul, "O(T_k^2) work"),
    (vjp_recomputes_a_dot_g_after_asarray, "recomputes the number a.g"),
    (vjp_by_naive_einsum, "without optimize=True"),
    (vjp_with_a_clipped, "it must be exactly 0"),
    (vjp_with_a_small_number_added, "it must be exactly 0"),
    (vjp_recomputes_a_dot_g_with_the_method, "recomputes the number a.g"),
    (vjp_recomputes_a_dot_g_in_a_loop_with_the_method, "recomputes the number a.g"),
    (vjp_recomputes_the_sum_of_a_times_g, "recomputes the number a.g"),
    (vjp_in_float32_cast_back, "computed in float32"),
    (vjp_in_float16_cast_back, "computed in float16"),
    (vjp_builds_j_on_saturated_rows, "(saturated)"),
    (vjp_builds_j_on_masked_rows, "(masked)"),
    (vjp_builds_j_on_dense_rows_only, "on a row of 64 keys"),
    (vjp_builds_j_on_saturated_masked_rows, "(saturated and masked)"),
    (vjp_row_by_row_on_saturated_rows, "recomputes the number a.g"),
    (vjp_builds_j_in_torch_on_masked_rows, "PyTorch operations touched"),
    (vjp_builds_j_except_at_powers_of_two, "it builds J"),
    (vjp_row_by_row_after_tolist, "one row of J at a time"),
    (vjp_row_by_row_after_tobytes, "one row of J at a time"),
    (vjp_row_by_row_after_fromiter, "one row of J at a time"),
    (vjp_row_by_row_after_copyto, "one row of J at a time"),
    (vjp_row_by_row_after_list, "one row of J at a time"),
    (vjp_a_dot_g_by_chunks_missing_the_tail,
     "its values: VJP on a dense row of 1500 keys, g of both signs differs"),
    (vjp_in_float32_on_long_rows, "its values: VJP on a dense row of 1500 keys"),
    (vjp_recomputes_a_dot_g_by_np_dot_on_lists, "recomputes the number a.g"),
    (vjp_recomputes_a_dot_g_by_sum_on_lists, "your vjp's sums (sum, math.fsum, statistics.fmean) took"),
    (vjp_recomputes_a_dot_g_by_fsum_on_lists, "your vjp's sums (sum, math.fsum, statistics.fmean) took"),
    (vjp_row_by_row_after_astype, "one row of J at a time"),
    (vjp_row_by_row_after_dunder_array, "one row of J at a time"),
    (vjp_recomputes_a_dot_g_after_astype, "recomputes the number a.g"),
    (vjp_recomputes_a_dot_g_after_dunder_array, "recomputes the number a.g"),
    (vjp_recomputes_a_dot_g_after_tolist, "recomputes the number a.g"),
    (vjp_row_by_row_after_asarray, "one row of J at a time"),
    (vjp_row_by_row_after_np_array, "one row of J at a time"),
    (vjp_pure_python_double_loop, "a loop inside a loop over the keys"),
    (vjp_j_in_32_row_torch_blocks, "PyTorch operations touched"),
    (vjp_builds_j_unless_the_row_is_long, "on a row of 64 keys"),
    (vjp_builds_j_on_short_rows_only, "on a row of 64 keys"),
    (vjp_recomputes_a_dot_g_on_every_row, "recomputes the number a.g"),
    (vjp_builds_j_in_torch, "builds J, the full T_k x T_k Jacobian"),
    (vjp_builds_j_in_torch_float32_in_place, "builds J"),
    (vjp_row_by_row, "one row of J at a time"),
    (vjp_row_by_row_comprehension, "one row of J at a time"),
    (vjp_builds_j_in_float32, "builds J"),
    (vjp_builds_j_by_einsum, "builds J"),
    (vjp_subtracts_the_top_keys_gradient, "VJP differs from the reference"),
    (vjp_as_list, "not a NumPy array"),
    (vjp_float32, "float32"),
    (vjp_of_log_softmax, "log-softmax"),
    (vjp_mean_for_weighted_mean, "np.mean(a * g)"),
    (vjp_diagonal_only, "diagonal of J alone"),
    (vjp_mean_times_a_twice, "a second time"),
    (vjp_mean_not_times_a, "must be multiplied by a"),
    (vjp_in_place, "in place"),
    (vjp_through_linalg, "builds J"),
    (vjp_without_mean, "- a (a.g) term is missing"),
    (vjp_minus_a, "not a itself"),
    (vjp_not_times_a, "multiplied by a"),
    (vjp_plain_mean, "weighted by a"),
    (vjp_builds_j, "builds J"),
    (vjp_column, "shape"),
    (vjp_row_matrix, "shape"),
    (vjp_sign_flipped, "sign is flipped"),
    (vjp_returns_none, "is None"),
    (vjp_of_attention_backward, "calls the library's own attention.attention_backward"),
    (vjp_of_blocked_attention_backward,
     "calls the library's own attention.blocked_attention_backward"),
    (vjp_with_its_nan_cleaned, "VJP of 7 keys, one weight 0 is 0 everywhere, where J g is "
                               "not: this row has a masked key"),
    (vjp_with_its_nan_set_to_0, "VJP of 7 keys, one weight 0 is 0 everywhere"),
    (vjp_in_long_double_returned, "VJP has dtype float"),
    (vjp_with_a_dot_g_in_float32, "VJP of softmax([8, 0, 0, 0]) differs from the reference "
                                  "by up to 1.3e-08: a.g was computed in float32"),
    (vjp_with_a_dot_g_in_float16, "a.g was computed in float16 (about 3 digits)"),
    (vjp_recomputes_a_dot_g_by_correlate_on_lists,
     "64 of them took a and g both: it recomputes the number a.g"),
    (vjp_j_in_blocks_of_8_rows, "on a row of 100 keys, its gradient g all positive, your "
                                "vjp's traced memory allocated line by line, summed, "
                                "reached 290 KiB, past the budget of 282 KiB at this length, "
                                "though little at once (J is 78 KiB): it computes J g one "
                                "row of J at a time (or a block of rows)"),
]


@pytest.mark.parametrize("wrong, words", WRONG_JACOBIANS, ids=lambda x: getattr(x, "__name__", x))
def test_wrong_jacobian_is_rejected_with_a_message_naming_the_mistake(wrong, words, capsys):
    assert checkers.check_softmax_jacobian(wrong, vjp) is False
    out = capsys.readouterr().out.replace("\n    ", " ")  # wrapped lines joined
    assert words in out, out


@pytest.mark.parametrize("wrong, words", WRONG_VJPS, ids=lambda x: getattr(x, "__name__", x))
def test_wrong_vjp_is_rejected_with_a_message_naming_the_mistake(wrong, words, capsys):
    assert checkers.check_softmax_jacobian(jacobian, wrong) is False
    out = capsys.readouterr().out.replace("\n    ", " ")  # wrapped lines joined
    assert words in out, out


def test_a_vjp_that_builds_j_is_caught_by_its_memory_even_though_its_numbers_are_right(capsys):
    a = attention.softmax(np.random.default_rng(0).standard_normal(16))
    g = np.random.default_rng(1).standard_normal(16)
    np.testing.assert_allclose(vjp_builds_j(a, g), attention.softmax_vjp(a, g))  # right numbers
    assert checkers.check_softmax_jacobian(jacobian, vjp_builds_j) is False
    out = capsys.readouterr().out
    assert "traced memory at its peak reached" in out and "builds J" in out
    assert "its cost: on a row" in out and "past the budget of 28 KiB" in out
    assert "6 of 7 checks passed." in out  # only the memory check fails


def test_an_exception_inside_the_attempt_is_reported_not_raised(capsys):
    def broken(a, g):
        raise RuntimeError("not yet")

    assert checkers.check_softmax_jacobian(jacobian, broken) is False
    assert "raised RuntimeError: not yet" in capsys.readouterr().out


def test_the_memory_check_leaves_an_outer_tracemalloc_session_running():
    import tracemalloc

    tracemalloc.start()
    try:
        checkers.check_softmax_jacobian(jacobian, vjp, verbose=False)
        assert tracemalloc.is_tracing()
    finally:
        tracemalloc.stop()


def test_a_vjp_that_builds_j_in_torch_is_caught_by_its_pytorch_operations(capsys):
    # tracemalloc does not see PyTorch's memory; the dispatch mode sees its operations
    assert checkers.check_softmax_jacobian(jacobian, vjp_builds_j_in_torch) is False
    out = capsys.readouterr().out
    assert "PyTorch operations touched" in out, out
    assert "builds J, the full T_k x T_k Jacobian" in out, out
    assert "6 of 7 checks passed." in out  # its numbers are right: only the cost fails


def test_the_cost_check_reports_small_numbers_for_the_right_vjp():
    ok, detail = jacobian_checker._vjp_cost(vjp)
    assert ok, detail
    assert "at most 3 passes over a row" in detail, detail


@pytest.mark.parametrize("wrong", [jacobian_in_float32_cast_back, jacobian_in_float16_cast_back])
def test_a_jacobian_in_a_narrower_float_fails_every_j_case_naming_its_precision(wrong, capsys):
    checkers.check_softmax_jacobian(wrong, vjp)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("✗")]
    assert len(lines) == 3 and all("cast back" in line for line in lines), lines


def test_a_dot_g_by_the_method_is_counted_and_pairs_only_when_it_is_recomputed():
    a = attention.softmax(np.random.default_rng(2).standard_normal(256))
    g = np.random.default_rng(3).standard_normal(256)
    work, pairs = jacobian_checker._vjp_work(vjp_recomputes_a_dot_g_with_the_method, a, g,
                                             pairs=True)
    assert work >= 256 * 256 and pairs == 256
    assert jacobian_checker._vjp_work(vjp, a, g, pairs=True)[1] == 1
    assert jacobian_checker._vjp_work(vjp_row_by_row, a, g, pairs=True)[1] == 0


def test_the_work_count_gives_numpy_its_own_converters_back_even_when_the_attempt_raises():
    own = {name: getattr(np, name) for name in dir(np) if not name.startswith("_")}
    assert {"asarray", "asanyarray", "hstack", "float64", "multiply"} <= \
        set(jacobian_checker._counted_namespace())  # every public callable is wrapped

    def raises_after_asarray(a, g):
        np.asarray(a)
        raise RuntimeError("not yet")

    a = attention.softmax(np.random.default_rng(4).standard_normal(8))
    with pytest.raises(RuntimeError):
        jacobian_checker._vjp_work(raises_after_asarray, a, a.copy())
    assert all(getattr(np, name) is f for name, f in own.items())


def test_the_cost_check_gives_python_its_own_sums_back_even_when_the_attempt_raises():
    import builtins
    own = builtins.sum, math.fsum

    def raises_inside_a_sum(a, g):
        return sum(1 / 0 for _ in a)

    a = attention.softmax(np.random.default_rng(4).standard_normal(256))
    cost = jacobian_checker._measured(vjp_recomputes_a_dot_g_by_sum_on_lists, a, a.copy())
    assert cost["over"] == "summed" and (builtins.sum, math.fsum) == own
    with pytest.raises(ZeroDivisionError):
        jacobian_checker._measured(raises_inside_a_sum, a, a.copy())
    assert (builtins.sum, math.fsum) == own


def vjp_row_by_row_on_a_plain_view(a, g):  # rv41n: passes (no new row, no np.empty)
    return _rows_of_j_into_copies(a.view(np.ndarray), g.view(np.ndarray))


def vjp_row_by_row_on_the_base(a, g):  # h22j: passes (a.base is a plain array)
    return _rows_of_j_into_copies(a if a.base is None else a.base,
                                  g if g.base is None else g.base)


def vjp_recomputes_a_dot_g_by_the_unbound_method(a, g):  # h22j: passes
    out = np.empty_like(a)
    for i in range(a.size):
        out[i] = a[i] * (g[i] - np.ndarray.dot(a, g))
    return out


def vjp_recomputes_a_dot_g_on_a_reversed_list_copy(a, g):  # st22c: passes
    b, h = np.array(a.tolist()[::-1])[::-1], np.array(g.tolist()[::-1])[::-1]
    out = np.empty(len(b))
    for i in range(len(b)):
        out[i] = b[i] * (h[i] - b @ h)
    return out


def vjp_recomputes_a_dot_g_on_a_padded_list_copy(a, g):  # st22c: passes
    b, h = np.array(a.tolist() + [0.0])[:-1], np.array(g.tolist() + [0.0])[:-1]
    out = np.empty(len(b))
    for i in range(len(b)):
        out[i] = b[i] * (h[i] - b @ h)
    return out


_WORKSPACE = []  # allocated before the check, by the test that uses it


def vjp_builds_j_in_a_workspace_made_before_the_call(a, g):  # st22c: passes
    b, h = np.array(a.tolist()[::-1])[::-1], np.array(g.tolist()[::-1])[::-1]
    n = len(b)
    J = _WORKSPACE[0][:n * n].reshape(n, n)
    for i in range(n):
        np.multiply(b, -b[i], out=J[i])
    J.reshape(-1)[::n + 1] += b
    return J @ h


def _fresh_rows_of_j(b, h):  # a new row of J for every key, on arrays the count misses
    out = np.empty(len(b))
    for i in range(len(b)):
        row = -b[i] * b
        row[i] += b[i]
        out[i] = row @ h
    return out


def vjp_fresh_rows_of_j_on_the_base(a, g):  # st24c: passed the volume at 512 by 0.02 KiB
    return _fresh_rows_of_j(a if a.base is None else a.base, g if g.base is None else g.base)


def vjp_fresh_rows_of_j_on_the_base_up_to_100_keys(a, g):  # passes: the docstring says so
    if len(a) > 100:
        return a * (g - a @ g)
    return vjp_fresh_rows_of_j_on_the_base(a, g)


def test_a_row_of_j_for_every_key_unseen_by_the_count_is_stopped_by_the_volume_from_495_keys(
        capsys):
    """st24c: the summed volume's budget at 512 keys was above a row of J for every key
    (2,162,688 bytes against 2,097,152): it is below it from 495 keys on, 1.4 times."""
    assert checkers.check_softmax_jacobian(jacobian, vjp_fresh_rows_of_j_on_the_base) is False
    out = capsys.readouterr().out.replace("\n    ", " ")
    assert "on a row of 512 keys" in out and "allocated line by line, summed, reached" in out
    assert "though little at once (J is 2048 KiB): it computes J g one row of J at a " \
           "time" in out, out
    for n in (495, 512, 1001, 1500, 4095, 4096):
        assert jacobian_checker.BUDGETS["volume"](n) * 1.35 < 8 * n * n - 400 * n

@pytest.mark.parametrize("blind", [vjp_row_by_row_on_a_plain_view, vjp_row_by_row_on_the_base,
                                   vjp_recomputes_a_dot_g_by_the_unbound_method,
                                   vjp_recomputes_a_dot_g_on_a_reversed_list_copy,
                                   vjp_recomputes_a_dot_g_on_a_padded_list_copy,
                                   vjp_builds_j_in_a_workspace_made_before_the_call,
                                   vjp_fresh_rows_of_j_on_the_base_up_to_100_keys])
def test_a_blind_spot_of_the_docstring_passes(blind, capsys):
    """The docstring says the checker cannot see a loop that allocates nothing per key and
    takes its buffers from a.view(np.ndarray) or a.base, nor a.g recomputed by
    np.ndarray.dot (saturation.md says only that some forms of O(T_k^2) work pass: rv43n),
    nor one on a copy whose values are not a or g when made, nor J written into memory
    allocated before the call (st22c; the page lists those two), nor, at 64 to 100 keys,
    a new row of J for every key on arrays the count misses (st24c: the summed volume's
    budget is above that there): if it learns to, the docstring and the page must
    change."""
    if blind is vjp_builds_j_in_a_workspace_made_before_the_call:
        _WORKSPACE[:] = [np.empty(jacobian_checker.LONG ** 2)]
    try:
        assert checkers.check_softmax_jacobian(jacobian, blind)
    finally:
        _WORKSPACE.clear()


def vjp_with_a_scratch_list_per_key(a, g):  # O(T_k), but 4 KiB made for every key
    ag = float(np.dot(a, g))
    out = np.empty(len(a))
    for i in range(len(a)):
        scratch = [float(a[i])] * 512
        out[i] = scratch[-1] * (g[i] - ag)
    return out


def test_a_vjp_allocating_much_per_key_is_told_the_budget_it_passed_not_that_it_builds_j(
        capsys):
    """st22c: an exact Fraction vjp was told "a loop inside a loop", then "one row of J at a
    time"; st24c: it must pass (it is in RIGHT). A vjp that allocates more per key than
    the volume's budget, O(T_k) in all, is told that budget, and that its volume grows
    like T_k from 512 keys to 2048."""
    assert checkers.check_softmax_jacobian(jacobian, vjp_with_a_scratch_list_per_key) is False
    out = capsys.readouterr().out.replace("\n    ", " ")
    assert "6 of 7 checks passed." in out
    assert "allocated line by line, summed, reached" in out
    assert "from 512 keys to 2048, not like T_k^2: many temporary objects made for every " \
           "key" in out, out
    cost = out.split("its cost: ")[1]
    assert "builds J" not in cost and "row of J" not in cost and "loop inside" not in cost


def vjp_in_decimals_keeping_its_lists_on_long_rows(a, g):  # O(T_k), many Decimals alive
    if len(a) < 400:
        return a * (g - a @ g)
    from decimal import Decimal
    al, gl = [Decimal(x) for x in a.tolist()], [Decimal(x) for x in g.tolist()]
    prods = [x * y for x, y in zip(al, gl)]
    ag = sum(prods)
    diffs = [y - ag for y in gl]
    return np.array([float(x * d) for x, d in zip(al, diffs)])


def test_a_peak_over_its_budget_below_j_s_size_is_not_told_it_builds_j(capsys):
    """st24c: "builds J" was told to every peak over its budget below 394 keys (the
    budget is above T_k^2 bytes there): it is told only where the peak is at least J's
    size in float64, 8 T_k^2 bytes; below that, the budget it passed."""
    assert checkers.check_softmax_jacobian(
        jacobian, vjp_in_decimals_keeping_its_lists_on_long_rows) is False
    out = capsys.readouterr().out.replace("\n    ", " ")
    assert "on a row of 512 keys" in out and "traced memory at its peak reached" in out, out
    assert "less than J in float64 (2048 KiB): many Python objects alive at once" in out, out
    assert "builds J" not in out.split("its cost: ")[1]

def _forty_lines(x):
    for _ in range(20):
        pass
    return x


def vjp_by_a_helper_of_forty_lines_per_key(a, g):  # O(T_k), past 32 lines per key
    ag = float(np.dot(a, g))
    return np.array([_forty_lines(x) * (y - ag) for x, y in zip(a, g)])


def vjp_by_a_double_loop_over_lists(a, g):  # O(T_k^2) lines, no array per key
    al, gl = a.tolist(), g.tolist()
    out = []
    for i in range(len(al)):
        s = 0.0
        for j in range(len(al)):
            s += ((al[i] if i == j else 0.0) - al[i] * al[j]) * gl[j]
        out.append(s)
    return np.array(out)


@pytest.mark.parametrize("cleaned", [vjp_with_its_nan_cleaned, vjp_with_its_nan_set_to_0])
def test_a_nan_cleaned_into_zeros_is_told_its_division_by_a_not_a_threshold(cleaned, capsys):
    """st22c: zeros from a cleaned 0/0 were blamed on a threshold on a.max(), on a masked
    row of 64 keys, the only row of its kind: every failure names the division by a."""
    assert checkers.check_softmax_jacobian(jacobian, cleaned) is False
    out = capsys.readouterr().out.replace("\n    ", " ")
    assert out.count("a division by an entry of a") == 2  # the 7-key row, the 64-key one
    assert "no threshold on a.max()" not in out and "saturated row still" not in out


def test_lines_over_their_budget_are_told_t_k_squared_only_when_they_grow_so(capsys):
    """st22c: a count of lines over its budget at one length was told "grows like
    T_k^2": it is said only when the count grows more than 6-fold from 16 keys to 64."""
    assert checkers.check_softmax_jacobian(jacobian, vjp_by_a_helper_of_forty_lines_per_key) \
        is False
    out = capsys.readouterr().out.replace("\n    ", " ")
    assert "lines of Python, its budget at this length (32 per key and 2,000)" in out
    assert "lines per key (a helper of many lines called for every key" in out
    assert "T_k^2" not in out
    assert checkers.check_softmax_jacobian(jacobian, vjp_by_a_double_loop_over_lists) is False
    out = capsys.readouterr().out.replace("\n    ", " ")
    assert "grew more than 6-fold from 64 keys to 256" in out and "T_k^2" in out, out


def test_growth_between_lengths_4_times_apart_tells_t_k_from_t_k_squared():
    linear = jacobian_checker._growth(vjp_by_a_long_helper_per_key, "lines")
    quadratic = jacobian_checker._growth(vjp_by_a_double_loop_over_lists, "lines")
    assert linear["lines"] <= 4 < jacobian_checker.QUADRATIC_GROWTH < quadratic["lines"]
    # st24c: a row of J made for every key, little at once, grows like T_k^2 from 512
    # keys to 2048 (from 16 to 64 its volume was the size of Python's objects per key)
    assert jacobian_checker.GROWTH_SIZES["volume"] == (512, 2048)
    rows = jacobian_checker._growth(vjp_row_by_row, "volume")["volume"]
    assert jacobian_checker.QUADRATIC_GROWTH < rows
    assert jacobian_checker._growth(vjp_in_fractions, "volume")["volume"] <= 4.5


def test_a_naive_einsum_counts_one_product_per_combination_of_its_indices():
    a = attention.softmax(np.random.default_rng(5).standard_normal(256))
    g = np.random.default_rng(6).standard_normal(256)
    assert jacobian_checker._vjp_work(vjp_by_naive_einsum, a, g) >= 256 * 256
    assert jacobian_checker._vjp_work(
        lambda a, g: a * (g - np.einsum("i,i->", a, g)), a, g) < 8 * 256


def test_a_one_hot_row_names_the_vjp_mistake_and_suspects_clipping_only_when_tiny(capsys):
    # st6a: g - a sum(g) differs by 2.8 at the one-hot row, and was told of clipping
    assert checkers.check_softmax_jacobian(jacobian, vjp_of_log_softmax) is False
    out = capsys.readouterr().out.replace("\n    ", " ")
    line = next(x for x in out.splitlines() if x.startswith("✗ a one-hot row passes"))
    assert "log-softmax" in line and "clipped" not in line, line
    assert checkers.check_softmax_jacobian(jacobian, vjp_with_a_clipped) is False
    out = capsys.readouterr().out.replace("\n    ", " ")
    line = next(x for x in out.splitlines() if x.startswith("✗ a one-hot row passes"))
    assert "clipped away from 0" in line, line


def test_zeros_are_not_taken_for_a_float16_result(capsys):
    """All zeros are float16 numbers too: a vjp returning zeros on saturated rows
    is told it returned 0, not that it computed in float16 (st7a)."""
    assert checkers.check_softmax_jacobian(jacobian, vjp_zero_past_1_minus_1e_7) is False
    out = capsys.readouterr().out
    assert "the result is 0 where J g is not" in out, out
    assert "float16" not in out, out


def test_the_vjp_answer_is_printed_neither_in_a_title_nor_in_a_message(capsys):
    """The exercise asks for the VJP's formula: the checker does not print it."""
    checkers.check_softmax_jacobian(jacobian, vjp)
    assert "VJP matches J g" in capsys.readouterr().out
    module = jacobian_checker
    a, g = np.array([0.7, 0.2, 0.1]), np.array([1.0, -2.0, 0.5])
    said = [m for m, _ in module._vjp_mistakes(a, g)] + [module.ZERO_WHERE_NOT]
    for wrong in (vjp_zero_past_1_minus_1e_9, vjp_recomputes_the_sum_of_ag_per_key,
                  vjp_by_a_stride_0_matmul):
        checkers.check_softmax_jacobian(jacobian, wrong)
        said.append(capsys.readouterr().out)
    for text in said:
        assert "a * (g - a.g)" not in text and "a * g - a (a.g)" not in text, text



def _costed_calls(record):
    """The calls _vjp_cost makes of a right vjp, each as ``record(a, g)``: (warm-ups,
    measured, counted), the measured calls' arrays plain, the counted ones (the NumPy
    work, on fresh rows) the checker's counting arrays, one after each measured call."""
    calls = []

    def recording(a, g):
        calls.append((type(a) is np.ndarray, record(a, g)))
        return a * (g - a @ g)

    assert jacobian_checker._vjp_cost(recording)[0]
    kinds = len(jacobian_checker.ROW_KINDS)
    rows = (kinds + 1) * len(jacobian_checker.SIZES)
    warm_ups, costed = calls[:kinds], calls[kinds:kinds + 2 * rows]
    assert all(plain for plain, _ in warm_ups)
    assert [plain for plain, _ in costed] == [True, False] * rows  # measured, counted
    return ([x for _, x in warm_ups], [x for _, x in costed[::2]],
            [x for _, x in costed[1::2]])


def test_every_costed_call_after_one_warm_up_is_on_a_row_not_seen_before_some_odd():
    """st9a: the measured call repeated its warm-up's row (a J cached per row passed)
    and every length was even (a J built on odd lengths passed); h22j: the NumPy work is
    counted at every length, each time on a row not seen before either."""
    warm_ups, measured, counted = _costed_calls(lambda a, g: a.tobytes())
    sizes = jacobian_checker.SIZES
    assert all(len(row) // 8 < min(sizes) for row in warm_ups)
    costed = measured + counted
    assert len(set(costed)) == len(costed) and not set(warm_ups) & set(costed)
    lengths = [len(row) // 8 for row in measured]
    assert set(sizes) <= set(lengths) and any(n % 2 for n in lengths)
    assert [len(row) // 8 for row in counted] == lengths


def test_the_measured_rows_meet_small_moduli_and_gradients_of_one_sign():
    """st13a: no measured length was divisible by 7 (a J built only there passed) and
    every measured g had both signs (a J built only for g > 0 passed); the counted rows
    (h22j) have the measured rows' lengths and kinds of gradient."""
    _, measured, counted = _costed_calls(
        lambda a, g: (len(a), int(np.sign(g).min()), int(np.sign(g).max())))
    assert counted == measured
    sizes, odd = jacobian_checker.SIZES, jacobian_checker.ODD_SIZES
    kinds = len(jacobian_checker.ROW_KINDS)
    lengths = [n for n, _, _ in measured]
    assert set(lengths) == set(sizes) | set(odd) and all(n % 2 for n in odd)
    for k in (3, 5, 7, 9, 11, 13):  # each divides two lengths, one of 99 keys or more
        assert len([n for n in odd if n % k == 0]) >= 2, k
        assert any(n % k == 0 and n >= 99 for n in odd), k
    positive, negative = (1, 1), (-1, -1)
    for i in range(len(sizes)):  # at every length, a g all positive and one all negative
        signs = [(lo, hi) for _, lo, hi in measured[i * (kinds + 1):(i + 1) * (kinds + 1)]]
        assert positive in signs and negative in signs and (-1, 1) in signs, signs
    for k in range(kinds + 1):  # every kind of row meets each kind of gradient
        signs = [(lo, hi) for _, lo, hi in measured[k::kinds + 1]]
        assert positive in signs and negative in signs and (-1, 1) in signs, (k, signs)


@pytest.mark.parametrize("modulus", [3, 5, 7, 9, 11, 13])
def test_a_vjp_that_builds_j_only_on_lengths_divisible_by_a_small_number_fails(modulus):
    def wrong(a, g):
        if len(a) % modulus == 0:
            return (np.diag(a) - np.outer(a, a)) @ g
        return a * (g - a @ g)

    ok, detail = jacobian_checker._vjp_cost(wrong)
    assert not ok and "it builds J" in detail, detail


def test_a_row_whose_largest_weight_is_1_has_small_entries_exact_to_a_few_roundings():
    """The docstring (st17a): at softmax([40, 0, 0, 0]) a.max() is exactly 1.0 in
    float64, yet J's and J g's entries off the top key's diagonal (-a_i a_j,
    a_j (1 - a_j), a_j (g_j - a.g)) are within a few roundings of the exact ones
    (60-digit decimals), over twenty standard normal g; only the top key's entries,
    differences of numbers near 1, are not (compared absolutely)."""
    from decimal import Decimal, localcontext

    s = np.array([40.0, 0.0, 0.0, 0.0])
    a = np.exp(s - s.max())
    a = a / a.sum()
    assert a.max() == 1.0
    rng = np.random.default_rng(0)
    eps = np.finfo(float).eps
    with localcontext() as ctx:
        ctx.prec = 60
        e = [Decimal(float(x)).exp() for x in s]
        exact_a = [x / sum(e) for x in e]
        exact_J = np.array([[float(x * ((1 if i == j else 0) - y))
                             for j, y in enumerate(exact_a)]
                            for i, x in enumerate(exact_a)])
        J = jacobian(a)
        off = ~np.eye(4, dtype=bool) | (np.arange(4) > 0)[:, None]
        assert np.all(np.abs(J - exact_J)[off] <= 4 * eps * np.abs(exact_J)[off])
        for _ in range(20):
            g = rng.standard_normal(4)
            ag = sum(x * Decimal(float(y)) for x, y in zip(exact_a, g))
            exact = np.array([float(x * (Decimal(float(y)) - ag))
                              for x, y in zip(exact_a, g)])
            got = vjp(a, g)
            assert np.all(np.abs(got - exact)[1:] <= 4 * eps * np.abs(exact)[1:])
            assert abs(got[0] - exact[0]) <= 4 * eps * 2 * abs(g[0]) + 1e-16

    def jacobian_unless_one_hot(a):
        return np.zeros((a.size, a.size)) if a.max() == 1.0 else jacobian(a)

    def vjp_unless_one_hot(a, g):
        return np.zeros_like(a) if a.max() == 1.0 else vjp(a, g)

    assert not checkers.check_softmax_jacobian(jacobian_unless_one_hot, vjp,
                                               verbose=False)
    assert not checkers.check_softmax_jacobian(jacobian, vjp_unless_one_hot,
                                               verbose=False)
