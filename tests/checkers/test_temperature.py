"""The checker of the exercise 'attention with a temperature' (ex-temperature) is a
specification: it accepts the right answer and rejects each plausible wrong attempt with a
message that names the mistake."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attention
from attention import checkers
from tests.checkers.conftest import run_once


def _softmax(S, axis=-1):
    E = np.exp(S - S.max(axis=axis, keepdims=True))
    return E / E.sum(axis=axis, keepdims=True)


def _scores(Q, K, tau):
    # a Python float keeps float32 inputs float32 (a NumPy float64 tau would not)
    return Q @ np.swapaxes(K, -1, -2) / (float(tau) * Q.shape[-1] ** 0.5)  # (..., T_q, T_k)


def _scaled(Q, K, tau):
    # the factor 1/(tau sqrt(d_k)) as a Python float: float32 inputs stay float32, and
    # tau sqrt(d_k) past float32's largest number is not made inf (st16b)
    return (1 / (float(tau) * Q.shape[-1] ** 0.5)) * (Q @ np.swapaxes(K, -1, -2))


def _work(*X):
    """The arrays in a dtype of at least float32 (float16 scores overflow when cold); the
    wrong attempts' work (st23b: raw products in float32 overflow, and round a cold
    near tie wrong, where float64's do not)."""
    w = np.promote_types(X[0].dtype, np.float32)
    return tuple(x.astype(w) for x in X)


def _exact(*X):
    """The arrays in float64: the right attempts' work, right at every tau."""
    return tuple(x.astype(np.float64) for x in X)


def _shifted(Q, K, tau):
    """The raw scores shifted by their row maximum, then divided by tau sqrt(d_k) in
    float64: finite at every tau > 0 (st20b: scaled first in float32, they are inf once
    the scaled scores, or the factor 1/(tau sqrt(d_k)), pass 3.4e38)."""
    R = Q @ np.swapaxes(K, -1, -2)
    return (R - R.max(axis=-1, keepdims=True)).astype(np.float64) / tau / Q.shape[-1] ** 0.5


def right(Q, K, V, tau):
    Qw, Kw, Vw = _exact(Q, K, V)
    A = _softmax(_shifted(Qw, Kw, tau))
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def right_in_torch(Q, K, V, tau):
    q, k, v = (torch.as_tensor(x) for x in _exact(Q, K, V))
    R = q @ k.transpose(-2, -1)
    # shifted, then divided in float64: every row's best is 0 at every tau
    S = (R - R.amax(dim=-1, keepdim=True)).double() / tau / q.shape[-1] ** 0.5
    A = torch.softmax(S, dim=-1)
    return (A @ v.double()).numpy().astype(Q.dtype), A.numpy().astype(Q.dtype)


def right_by_the_library(Q, K, V, tau):
    return attention.scaled_dot_product_attention(Q, K, V, temperature=tau)


# --- plausible wrong attempts --------------------------------------------------------------

def output_zeros(Q, K, V, tau):
    A = _softmax(_scores(Q, K, tau))
    return np.zeros(A.shape[:-1] + V.shape[-1:]), A  # forgot the last step


def output_none(Q, K, V, tau):
    A = _softmax(_scores(Q, K, tau))
    return None, A


def tau_multiplies(Q, K, V, tau):
    A = _softmax(tau * Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]))
    return A @ V, A


def tau_after_the_softmax(Q, K, V, tau):
    A = _softmax(_scores(Q, K, 1.0)) / tau
    return A @ V, A


def softmax_over_the_query_axis(Q, K, V, tau):
    A = _softmax(_scores(Q, K, tau), axis=-2)
    return A @ V, A


def sqrt_d_k_dropped(Q, K, V, tau):
    A = _softmax(Q @ np.swapaxes(K, -1, -2) / tau)
    return A @ V, A


def d_k_instead_of_sqrt(Q, K, V, tau):
    A = _softmax(Q @ np.swapaxes(K, -1, -2) / (tau * Q.shape[-1]))
    return A @ V, A


def tau_inside_the_root(Q, K, V, tau):
    A = _softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(tau * Q.shape[-1]))
    return A @ V, A


def tau_ignored(Q, K, V, tau):
    A = _softmax(_scores(Q, K, 1.0))
    return A @ V, A


def weights_transposed(Q, K, V, tau):
    A = _softmax(_scores(Q, K, tau))
    return A @ V, np.swapaxes(A, -1, -2)


def no_max_subtraction(Q, K, V, tau):
    with np.errstate(over="ignore", invalid="ignore"):
        E = np.exp(_scores(Q, K, tau))
        A = E / E.sum(axis=-1, keepdims=True)
    return A @ V, A


def transpose_with_dot_T(Q, K, V, tau):
    A = _softmax(Q @ K.T / (tau * np.sqrt(Q.shape[-1])))  # .T reverses batch axes too
    return A @ V, A


def argmax_when_cold(Q, K, V, tau):
    S = _scores(Q, K, tau)
    if tau < 0.01:  # "hard retrieval": one-hot on the best key
        A = (np.arange(S.shape[-1]) == S.argmax(axis=-1)[..., None]).astype(float)
    else:
        A = _softmax(S)
    return A @ V, A


def returns_weights_first(Q, K, V, tau):
    O, A = right(Q, K, V, tau)
    return A, O


def output_divided_by_tau(Q, K, V, tau):
    A = _softmax(_scores(Q, K, tau))
    return A @ V / tau, A


def output_from_unnormalised_exponentials(Q, K, V, tau):
    S = _scores(Q, K, tau)
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    A = E / E.sum(axis=-1, keepdims=True)
    return E @ V, A  # the product uses E, before the division by the row sums


def returns_only_the_output(Q, K, V, tau):
    return right(Q, K, V, tau)[0]


def tau_squared(Q, K, V, tau):
    A = _softmax(_scores(Q, K, tau**2))
    return A @ V, A


def tau_on_both_q_and_k(Q, K, V, tau):
    A = _softmax(_scores(Q / tau, K / tau, 1.0))  # tau twice: tau^2 in all
    return A @ V, A


def scores_times_sqrt_d_k(Q, K, V, tau):
    A = _softmax(Q @ np.swapaxes(K, -1, -2) * np.sqrt(Q.shape[-1]) / tau)
    return A @ V, A


def d_k_from_the_first_axis(Q, K, V, tau):
    A = _softmax(_scores(Q, K, tau) * np.sqrt(Q.shape[-1] / Q.shape[0]))
    return A @ V, A


def d_k_from_len_of_K(Q, K, V, tau):
    d_k = len(K)  # the number of keys, not their width
    A = _softmax(Q @ np.swapaxes(K, -1, -2) / (tau * np.sqrt(d_k)))
    return A @ V, A


def temperature_on_the_values(Q, K, V, tau):
    A = _softmax(_scores(Q, K, 1.0))
    return A @ (V / tau), A


def values_in_another_order(Q, K, V, tau):
    A = _softmax(_scores(Q, K, tau))
    return A @ V[..., ::-1, :], A  # weights right, values reversed


def np_dot_instead_of_matmul(Q, K, V, tau):
    A = _softmax(_scores(Q, K, tau))
    return np.dot(A, V), A  # on stacks, np.dot pairs every batch with every other


def einsum_without_ellipsis(Q, K, V, tau):
    A = _softmax(_scores(Q, K, tau))
    return np.einsum("qk,kd->qd", A, V), A  # one head only


def softmax_along_axis_1(Q, K, V, tau):
    A = _softmax(_scores(Q, K, tau), axis=1)  # the key axis only when 2-D
    return A @ V, A


def one_maximum_for_the_whole_array(Q, K, V, tau):
    S = _scores(Q, K, tau)
    with np.errstate(invalid="ignore"):
        E = np.exp(S - S.max())  # not each row's own maximum
        A = E / E.sum(axis=-1, keepdims=True)
    return A @ V, A


def maximum_without_keepdims(Q, K, V, tau):
    S = _scores(Q, K, tau)
    E = np.exp(S - S.max(axis=-1))  # (T_q, T_k) - (T_q,): does not broadcast
    A = E / E.sum(axis=-1)
    return A @ V, A


def weights_not_normalised(Q, K, V, tau):
    S = _scores(Q, K, tau)
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    return (E @ V) / E.sum(axis=-1, keepdims=True), E  # O right, A unnormalised


def log_weights_returned(Q, K, V, tau):
    S = _scores(Q, K, tau)
    S = S - S.max(axis=-1, keepdims=True)
    L = S - np.log(np.exp(S).sum(axis=-1, keepdims=True))
    return np.exp(L) @ V, L


def computed_in_float32(Q, K, V, tau):
    q, k, v = (torch.as_tensor(x).float() for x in (Q, K, V))
    A = torch.softmax(q @ k.transpose(-2, -1) / (tau * q.shape[-1] ** 0.5), -1)
    return (A @ v).numpy(), A.numpy()


def scales_Q_in_place(Q, K, V, tau):
    Q /= tau * np.sqrt(Q.shape[-1])  # right result, but the caller's Q is overwritten
    A = _softmax(Q @ np.swapaxes(K, -1, -2))
    return A @ V, A


def argmax_below_a_tiny_tau(Q, K, V, tau):
    S = _scores(Q, K, tau)
    if tau < 1e-6:  # "tau is practically 0": hard retrieval
        A = (np.arange(S.shape[-1]) == S.argmax(axis=-1)[..., None]).astype(float)
    else:
        A = _softmax(S)
    return A @ V, A


def sqrt_of_d_k_plus_one(Q, K, V, tau):
    A = _softmax(Q @ np.swapaxes(K, -1, -2) / (tau * np.sqrt(Q.shape[-1] + 1)))
    return A @ V, A


def np_sqrt_turns_float32_into_float64(Q, K, V, tau):
    """The page's first solution: np.sqrt gives a float64 scalar."""
    S = Q @ np.swapaxes(K, -1, -2) / (tau * np.sqrt(Q.shape[-1]))
    A = _softmax(S)
    return A @ V, A


def clips_the_scores(Q, K, V, tau):
    S = np.clip(_scores(Q, K, tau), -80, 80)  # "so that exp() cannot overflow"
    E = np.exp(S)
    A = E / E.sum(axis=-1, keepdims=True)
    return A @ V, A


def uniform_when_hot(Q, K, V, tau):
    S = _scores(Q, K, tau)
    A = np.full(S.shape, 1 / S.shape[-1]) if tau > 1e4 else _softmax(S)
    return A @ V, A


def right_only_at_the_checkers_d_k(Q, K, V, tau):
    A = _softmax(Q @ np.swapaxes(K, -1, -2) / (tau * 7 ** 0.5))  # d_k = 7
    return A @ V, A


def right_only_at_the_checkers_temperatures(Q, K, V, tau):
    if tau not in (0.5, 2.0, 5.0, 1e-3, 1e-12, 1e6):
        tau = 1.0  # "the other temperatures are not tested"
    A = _softmax(_scores(Q, K, tau))
    return A @ V, A


def casts_to_float64(Q, K, V, tau):
    O, A = right(*(x.astype(np.float64) for x in (Q, K, V)), tau)
    return O, A


def first_order_expansion_when_hot(Q, K, V, tau):
    S = _scores(Q, K, tau)
    if tau > 50:  # "exp(x) = 1 + x for small x"
        A = (1 + S - S.mean(axis=-1, keepdims=True)) / S.shape[-1]
    else:
        A = _softmax(S)
    return A @ V, A


def tau_plus_a_tiny_epsilon(Q, K, V, tau):
    A = _softmax(_scores(Q, K, tau + 1e-15))  # "never divide by 0"
    return A @ V, A


def argmax_below_1e_10(Q, K, V, tau):
    S = _scores(Q, K, tau)
    if tau < 1e-10:
        A = (S == S.max(axis=-1, keepdims=True)).astype(float)
        A /= A.sum(axis=-1, keepdims=True)
    else:
        A = _softmax(S)
    return A @ V, A


def tau_clamped_at_1e_16(Q, K, V, tau):
    A = _softmax(_scores(Q, K, max(tau, 1e-16)))  # below the former coldest near tie
    return A @ V, A


def tau_clamped_at_the_machine_epsilon(Q, K, V, tau):
    A = _softmax(_scores(Q, K, max(tau, np.finfo(float).eps)))
    return A @ V, A


def tau_plus_1e_18(Q, K, V, tau):
    A = _softmax(_scores(Q, K, tau + 1e-18))
    return A @ V, A


def argmax_below_1e_16_ties_shared(Q, K, V, tau):
    S = _scores(Q, K, tau)
    if tau < 1e-16:  # below the checker's former near ties
        A = (S == S.max(axis=-1, keepdims=True)).astype(Q.dtype)
        A /= A.sum(axis=-1, keepdims=True)
    else:
        A = _softmax(S)
    return A @ V, A


def uniform_above_1e6(Q, K, V, tau):
    S = _scores(Q, K, tau)
    A = np.full(S.shape, 1 / S.shape[-1]) if tau > 1e6 else _softmax(S)
    return A @ V, A


def second_order_exp_when_hot(Q, K, V, tau):
    S = _scores(Q, K, tau)
    if tau >= 100:  # "exp(x) = 1 + x + x^2/2 for small x"
        E = 1 + S + S**2 / 2
    else:
        E = np.exp(S - S.max(axis=-1, keepdims=True))
    A = E / E.sum(axis=-1, keepdims=True)
    return A @ V, A


def root_with_a_wrong_exponent(Q, K, V, tau):
    A = _softmax(Q @ np.swapaxes(K, -1, -2) / (float(tau) * Q.shape[-1] ** 0.4999))
    return A @ V, A


def np_float64_tau_promotes_float32(Q, K, V, tau):
    S = Q @ np.swapaxes(K, -1, -2) / (tau * Q.shape[-1] ** 0.5)  # tau as given
    A = _softmax(S)
    return A @ V, A


def d_k_instead_of_sqrt_when_hot(Q, K, V, tau):
    d_k = Q.shape[-1]
    c = 1 / (float(tau) * (d_k if tau > 1e4 else d_k**0.5))
    A = _softmax(c * (Q @ np.swapaxes(K, -1, -2)))
    return A @ V, A


def sqrt_d_v_when_hot(Q, K, V, tau):
    width = V.shape[-1] if tau > 1e4 else Q.shape[-1]  # the wrong width, hot only
    A = _softmax(Q @ np.swapaxes(K, -1, -2) / (float(tau) * width**0.5))
    return A @ V, A


def d_k_from_the_second_axis_of_K(Q, K, V, tau):
    A = _softmax(Q @ np.swapaxes(K, -1, -2) / (float(tau) * K.shape[1] ** 0.5))  # 2-D
    return A @ V, A


def argmax_with_isclose_ties_when_cold(Q, K, V, tau):
    S = _scores(Q, K, tau)
    if tau < 1e-6:  # ties "up to rounding" share the weight
        top = np.isclose(S, S.max(axis=-1, keepdims=True))
        A = top / top.sum(axis=-1, keepdims=True)
    else:
        A = _softmax(S)
    return A @ V, A


# Found by the student round st4b.
def floor_on_the_shifted_scores(Q, K, V, tau):
    S = _scores(Q, K, tau)
    S = np.clip(S - S.max(axis=-1, keepdims=True), -20, 0)  # "no underflow"
    E = np.exp(S)
    A = E / E.sum(axis=-1, keepdims=True)
    return A @ V, A


def tau_rounded_to_float32(Q, K, V, tau):
    return right(Q, K, V, float(np.float32(tau)))  # "to save memory"


def factor_in_float32(Q, K, V, tau):
    c = np.float32(1 / (tau * Q.shape[-1] ** 0.5))
    A = _softmax(float(c) * (Q @ np.swapaxes(K, -1, -2)))
    return A @ V, A


def inverse_sqrt_d_k_in_float32(Q, K, V, tau):
    # st25b: told "no rounding to float32 gives that factor"; it is 1/sqrt(d_k) rounded
    Qw, Kw, Vw = _exact(Q, K, V)
    c = np.float32(1 / np.sqrt(Q.shape[-1]))
    R = Qw @ np.swapaxes(Kw, -1, -2)
    A = _softmax((R - R.max(axis=-1, keepdims=True)) * float(c) / tau)
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def tau_clamped_at_the_dtypes_tiny(Q, K, V, tau):
    # st25b: max(tau, np.finfo(Q.dtype).tiny) passed float32 (the 1e-40 case's entries
    # of size 1 gave the same one-hot weights) and float16 inputs were told "raw
    # products computed in float32" (right on float64 copies: there tiny is 2.2e-308)
    return right(Q, K, V, max(tau, float(np.finfo(Q.dtype).tiny)))


def tau_clamped_at_float32s_tiny(Q, K, V, tau):
    # the same for float32 inputs only: the float32 inputs of size 1e-20 at 1e-40 show it
    if Q.dtype == np.float32:
        tau = max(tau, float(np.finfo(np.float32).tiny))
    return right(Q, K, V, tau)


def tau_clamped_at_float64s_tiny(Q, K, V, tau):
    # the same for float64 inputs only: the subnormal tau 1e-310 shows it
    if Q.dtype == np.float64:
        tau = max(tau, float(np.finfo(np.float64).tiny))
    return right(Q, K, V, tau)


def tau_clamped_from_above_at_1e300(Q, K, V, tau):
    # st25b: min(tau, 1e300) was right at every tau probed (1e300 the hottest)
    return right(Q, K, V, min(tau, 1e300))


def factor_computed_first(Q, K, V, tau):
    # c = 1/(tau sqrt(d_k)), then the shifted raw scores times c, in float64: inf at a
    # subnormal tau, where the raw scores divided by tau, then by sqrt(d_k), are finite
    Qw, Kw, Vw = _exact(Q, K, V)
    R = Qw @ np.swapaxes(Kw, -1, -2)
    A = _softmax((R - R.max(axis=-1, keepdims=True)) * (1 / (tau * np.sqrt(Q.shape[-1]))))
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def O_returned_as_a_list(Q, K, V, tau):
    # st25b: told "O is None" (O.tolist(): right values, no dtype)
    O, A = right(Q, K, V, tau)
    return O.tolist(), A


def tau_as_a_torch_tensor(Q, K, V, tau):
    q, k, v = (torch.as_tensor(x) for x in (Q, K, V))
    t = torch.tensor(tau)  # float32 by default: tau rounded
    A = torch.softmax(q @ k.transpose(-2, -1) / (t * q.shape[-1] ** 0.5), dim=-1)
    return (A @ v).numpy(), A.numpy()


def float32_work_cast_back(Q, K, V, tau):
    O, A = right(*(x.astype(np.float32) for x in (Q, K, V)), tau)
    return O.astype(Q.dtype), A.astype(Q.dtype)


def float16_work(Q, K, V, tau):
    q, k, v = (x.astype(np.float16) for x in (Q, K, V))
    S = (q @ np.swapaxes(k, -1, -2)) * np.float16(1 / (tau * Q.shape[-1] ** 0.5))
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    A = E / E.sum(axis=-1, keepdims=True)
    return A @ v, A


def shift_by_the_column_maximum(Q, K, V, tau):
    S = _scores(Q, K, tau)
    E = np.exp(S - S.max(axis=-2, keepdims=True))
    A = E / E.sum(axis=-1, keepdims=True)
    return A @ V, A


def temperature_as_a_power(Q, K, V, tau):
    S = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1] ** 0.5
    E = np.exp(S - S.max(axis=-1, keepdims=True)) ** (1 / tau)
    A = E / E.sum(axis=-1, keepdims=True)
    return A @ V, A


def uniform_above_1e8(Q, K, V, tau):
    S = _scores(Q, K, tau)
    A = np.full(S.shape, 1 / S.shape[-1]) if tau >= 1e8 else _softmax(S)
    return A @ V, A


def output_the_mean_of_the_values_when_hot(Q, K, V, tau):
    O, A = right(Q, K, V, tau)
    if tau > 1e5:
        O = np.broadcast_to(V.mean(axis=-2, keepdims=True), O.shape).copy()
    return O, A


def epsilon_in_the_row_sums(Q, K, V, tau):
    S = _scores(Q, K, tau)
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    A = E / (E.sum(axis=-1, keepdims=True) + 1e-9)  # "never divide by 0"
    return A @ V, A


def epsilon_1e_8_in_the_row_sums(Q, K, V, tau):
    S = _scores(Q, K, tau)
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    A = E / (E.sum(axis=-1, keepdims=True) + 1e-8)
    return A @ V, A


# Found by the student round st5b.
def shift_clamped_at_zero(Q, K, V, tau):
    S = _scores(Q, K, tau)
    with np.errstate(invalid="ignore"):
        E = np.exp(S - np.maximum(S.max(axis=-1, keepdims=True), 0))  # "only if positive"
        A = E / E.sum(axis=-1, keepdims=True)
    return A @ V, A


# Found by the student round st12b: a floor on the shift passed (the all-negative
# rows lay only at -1000, where a floor at -300 or -700 leaves exp() in range).
def _shift_floored_at(floor, only=None):
    def attempt(Q, K, V, tau):
        Qw, Kw, Vw = _work(Q, K, V)
        S = _scores(Qw, Kw, tau)
        m = S.max(axis=-1, keepdims=True)
        if only is None or S.dtype == only:
            m = np.maximum(m, S.dtype.type(floor))
        with np.errstate(invalid="ignore", divide="ignore"):
            E = np.exp(S - m)
            A = E / E.sum(axis=-1, keepdims=True)
        return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)
    attempt.__name__ = f"shift_floored_at_{-floor}" + (
        f"_in_{np.dtype(only).name}" if only else "")
    return attempt


shift_floored_at_700 = _shift_floored_at(-700.0)
shift_floored_at_300 = _shift_floored_at(-300.0)
# the same in float32 only (float64 rows at -1000 and -1e5 shifted right), at -80,
# where exp() of the row near -200 underflows to 0, and at -100, where it is
# subnormal
shift_floored_at_80_in_float32 = _shift_floored_at(-80.0, np.float32)
shift_floored_at_100_in_float32 = _shift_floored_at(-100.0, np.float32)


def shift_only_when_the_scores_could_overflow(Q, K, V, tau):
    S = _scores(Q, K, tau)
    with np.errstate(invalid="ignore"):
        E = np.exp(S - S.max(axis=-1, keepdims=True) if S.max() > 700 else S)
        A = E / E.sum(axis=-1, keepdims=True)
    return A @ V, A


def log_sum_exp_added_to_the_maximum(Q, K, V, tau):
    S = _scores(Q, K, tau)
    m = S.max(axis=-1, keepdims=True)
    L = m + np.log(np.exp(S - m).sum(axis=-1, keepdims=True))  # rounds to m's precision
    A = np.exp(S - L)
    return A @ V, A


def the_librarys_function_imported_inside(Q, K, V, tau):
    from attention.forward import scaled_dot_product_attention as sdpa  # under a new name
    return sdpa(Q, K, V, temperature=tau)


def the_librarys_tiled_attention(Q, K, V, tau):
    return attention.tiled_attention(Q, K, V, block_size=2, temperature=tau)


def one_maximum_for_all_the_heads(Q, K, V, tau):
    S = _scores(Q, K, tau)
    m = S.max(axis=-1, keepdims=True) if S.ndim == 2 else S.max()  # right on one head only
    with np.errstate(invalid="ignore"):
        E = np.exp(S - m)
        A = E / E.sum(axis=-1, keepdims=True)
    return A @ V, A


def at_least_float32(Q, K, V, tau):
    dtype = np.result_type(Q.dtype, np.float32)  # float16 in, float32 out
    return right(*(x.astype(dtype) for x in (Q, K, V)), tau)


# Found by the student round st6b.
def uniform_above_1e10(Q, K, V, tau):
    S = _scores(Q, K, tau)
    A = np.full(S.shape, 1 / S.shape[-1]) if tau > 1e10 else _softmax(S)
    return A @ V, A


def first_order_expansion_above_1e10(Q, K, V, tau):
    S = _scores(Q, K, tau)
    if tau > 1e10:
        A = (1 + S - S.mean(axis=-1, keepdims=True)) / S.shape[-1]
    else:
        A = _softmax(S)
    return A @ V, A


def tau_clamped_at_1e_19(Q, K, V, tau):
    A = _softmax(_scores(Q, K, max(tau, 1e-19)))
    return A @ V, A


def argmax_below_1e_18(Q, K, V, tau):
    S = _scores(Q, K, tau)
    if tau < 1e-18:
        top = (S == S.max(axis=-1, keepdims=True)).astype(float)
        A = top / top.sum(axis=-1, keepdims=True)
    else:
        A = _softmax(S)
    return A @ V, A


def the_librarys_function_in_a_thread(Q, K, V, tau):
    import threading

    out = {}
    t = threading.Thread(target=lambda: out.update(
        r=attention.scaled_dot_product_attention(Q, K, V, temperature=tau)))
    t.start()
    t.join()
    return out["r"]


def the_librarys_private_blocked_forward(Q, K, V, tau):
    from attention.blocked import _blocked_forward

    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    return _blocked_forward(Q, K, V, None, batch, 1 / (tau * Q.shape[-1] ** 0.5))


def the_librarys_private_attend(Q, K, V, tau):
    from attention import forward

    return forward._attend(Q, K, V, None, 1 / (tau * Q.shape[-1] ** 0.5))


def the_librarys_online_softmax(Q, K, V, tau):
    from attention.backward import _output_and_log_sum_exp

    c = 1 / (tau * Q.shape[-1] ** 0.5)
    w = np.promote_types(Q.dtype, np.float32)
    Qw, Kw, Vw = (x.astype(w) for x in (Q, K, V))
    O, lse = _output_and_log_sum_exp(Qw, Kw, Vw, None, c, 64)
    A = np.exp(c * (Qw @ np.swapaxes(Kw, -1, -2)) - lse[..., None])
    return O.astype(Q.dtype), A.astype(Q.dtype)


def the_librarys_torch_function_imported_inside(Q, K, V, tau):
    from attention.torch import safe_softmax
    from attention.torch import scaled_dot_product_attention as sdpa

    q, k, v = (torch.from_numpy(np.ascontiguousarray(x)) for x in (Q, K, V))
    if q.dtype == torch.float16:
        q, k, v = q.float(), k.float(), v.float()
    c = 1 / (tau * Q.shape[-1] ** 0.5)
    A = safe_softmax((q @ k.transpose(-1, -2)) * c)
    return (sdpa(q, k, v, scale=c).numpy().astype(Q.dtype),
            A.numpy().astype(Q.dtype))


def right_by_torch_sdpa(Q, K, V, tau):
    q, k, v = (torch.as_tensor(x) for x in (Q, K, V))
    c = 1 / (tau * q.shape[-1] ** 0.5)
    O = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=c)
    return O.numpy(), torch.softmax(c * q @ k.transpose(-2, -1), -1).numpy()


def clips_the_scaled_scores_at(L):
    def attempt(Q, K, V, tau):
        S = np.clip(_scores(Q, K, tau), -L, L)  # "so that nothing overflows"
        A = _softmax(S)
        return A @ V, A
    attempt.__name__ = f"clips_the_scaled_scores_at_{L:g}"
    return attempt


clip_1e4, clip_1e8, clip_1e10, clip_1e13, clip_1e15 = (
    clips_the_scaled_scores_at(L) for L in (1e4, 1e8, 1e10, 1e13, 1e15))
# st14b: clips at 1e17, 1e30 and 1e200 passed (the clipping probe ran at tau = 1e-12
# only, where the scaled scores are about 7e15); at 1e-300 they are about 7e303
clip_1e17, clip_1e30, clip_1e200 = (
    clips_the_scaled_scores_at(L) for L in (1e17, 1e30, 1e200))


def d_k_from_axis_1(Q, K, V, tau):
    d_k = Q.shape[1] if Q.ndim < 4 else Q.shape[-1]  # right on 2-D and 4-D only
    A = _softmax(Q @ np.swapaxes(K, -1, -2) / (tau * d_k ** 0.5))
    return A @ V, A


def einsum_with_fixed_letters(Q, K, V, tau):
    subscripts = {2: "qd,kd->qk", 3: "bqd,bkd->bqk", 4: "bhqd,bhkd->bhqk"}
    S = np.einsum(subscripts.get(Q.ndim, "bqd,bkd->bqk"), Q, K)
    A = _softmax(S / (tau * Q.shape[-1] ** 0.5))
    return A @ V, A


def float16_work_for_float32_inputs(Q, K, V, tau):
    if Q.dtype == np.float32:
        O, A = right(*(x.astype(np.float16) for x in (Q, K, V)), tau)
        return O.astype(np.float32), A.astype(np.float32)
    return right(Q, K, V, tau)


# Found by the student round st7b.
def shift_only_when_cold(threshold):
    def attempt(Q, K, V, tau):
        S = _scores(Q, K, tau)
        if tau < threshold:  # "only a small tau makes the scores large"
            S = S - S.max(axis=-1, keepdims=True)
        with np.errstate(all="ignore"):
            E = np.exp(S)
            A = E / E.sum(axis=-1, keepdims=True)
        return A @ V, A
    attempt.__name__ = f"shift_only_when_tau_below_{threshold:g}"
    return attempt


shift_below_1, shift_below_0_02 = shift_only_when_cold(1.0), shift_only_when_cold(0.02)


def no_shift_when_hot(Q, K, V, tau):
    S = _scores(Q, K, tau)
    if tau < 100:  # "a large tau makes every score small"
        S = S - S.max(axis=-1, keepdims=True)
    with np.errstate(all="ignore"):
        E = np.exp(S)
        A = E / E.sum(axis=-1, keepdims=True)
    return A @ V, A


def factor_in_the_inputs_dtype(Q, K, V, tau):
    """The page's former solution: float16 inputs computed in float16."""
    c = Q.dtype.type(1 / (tau * Q.shape[-1] ** 0.5))
    with np.errstate(all="ignore"):
        A = _softmax(c * (Q @ np.swapaxes(K, -1, -2)))
    return A @ V, A


def float16_throughout(Q, K, V, tau):
    with np.errstate(all="ignore"):
        A = _softmax(Q @ np.swapaxes(K, -1, -2) / Q.dtype.type(tau * Q.shape[-1] ** 0.5))
    return A @ V, A


def temperature_as_a_power_of_the_weights(Q, K, V, tau):
    A1 = _softmax(_scores(Q, K, 1.0))
    with np.errstate(all="ignore"):
        P = A1 ** (1 / tau)  # "softmax(S / tau) is softmax(S) to the power 1/tau"
        A = P / P.sum(axis=-1, keepdims=True)
    return A @ V, A


def floor_at(L):
    def attempt(Q, K, V, tau):
        S = _scores(Q, K, tau)
        E = np.exp(np.maximum(S - S.max(axis=-1, keepdims=True), -L))
        A = E / E.sum(axis=-1, keepdims=True)
        return A @ V, A
    attempt.__name__ = f"floor_at_{L:g}"
    return attempt


floor_at_25, floor_at_30 = floor_at(25.0), floor_at(30.0)


# found by the student round st8b: mistakes that only sizes which agree show
def causal_mask_if_square(Q, K, V, tau):
    # a causal mask whenever the score matrix is square, "as in self-attention"
    Qw, Kw, Vw = _work(Q, K, V)
    S = _scores(Qw, Kw, tau)
    T_q, T_k = S.shape[-2:]
    if T_q == T_k:
        S = np.where(np.tri(T_q, dtype=bool), S, -np.inf)
    A = _softmax(S)
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def k_layout_auto_detected(Q, K, V, tau):
    # K accepted as (T_k, d_k) or already transposed (d_k, T_k), told apart by its shape
    Qw, Kw, Vw = _work(Q, K, V)
    K_t = Kw if Kw.shape[-2] == Qw.shape[-1] else np.swapaxes(Kw, -1, -2)
    A = _softmax(Qw @ K_t / (tau * np.sqrt(Qw.shape[-1])))
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def shifted_by(shift):
    def attempt(Q, K, V, tau):
        S = _scores(Q, K, tau)
        E = np.exp(S - shift(Q @ np.swapaxes(K, -1, -2), S))
        A = E / E.sum(axis=-1, keepdims=True)
        return A @ V, A
    return attempt


shift_by_the_row_mean = shifted_by(lambda R, S: S.mean(axis=-1, keepdims=True))
shift_by_the_row_minimum = shifted_by(lambda R, S: S.min(axis=-1, keepdims=True))
shift_by_the_unscaled_maximum = shifted_by(lambda R, S: R.max(axis=-1, keepdims=True))

# found by the student round st10b
def factor_in_float16_rest_in_float32(Q, K, V, tau):
    # "keep the factor in the inputs' dtype", the scores computed in float32: the
    # factor is inf in float16 for tau below about 6e-6 at d_k = 6
    c = Q.dtype.type(1 / (tau * Q.shape[-1] ** 0.5))
    Qw, Kw, Vw = _work(Q, K, V)
    A = _softmax(c * (Qw @ np.swapaxes(Kw, -1, -2)))
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def tau_in_the_inputs_dtype(Q, K, V, tau):
    # tau as Q's dtype, the rest in float32: 1e-8 and below round to 0 in float16
    tau = Q.dtype.type(tau)
    Qw, Kw, Vw = _work(Q, K, V)
    with np.errstate(all="ignore"):
        A = _softmax(Qw @ np.swapaxes(Kw, -1, -2) / (tau * Q.shape[-1] ** 0.5))
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def raw_scores_shifted_in_float16(Q, K, V, tau):
    # (once among the right attempts: "the raw scores' differences divided by a small
    # tau are -inf, whose exp() is 0") float16 throughout, the raw scores shifted
    # before they are divided: a float16 array divided by a Python float is divided in
    # float16, where tau sqrt(d_k) below about 3e-8 rounds to 0, and 0/0 is NaN
    R = Q @ np.swapaxes(K, -1, -2)
    with np.errstate(all="ignore"):
        E = np.exp((R - R.max(axis=-1, keepdims=True)) / (float(tau) * Q.shape[-1] ** 0.5))
        A = E / E.sum(axis=-1, keepdims=True)
    return A @ V, A


def one_hot_when_the_lead_passes(G):
    def attempt(Q, K, V, tau):
        # "hard retrieval once the best scaled score leads the next by more than G"
        S = _scores(Q, K, tau)
        top = np.sort(S, axis=-1)
        lead = top[..., -1] - top[..., -2]
        one_hot = (S == S.max(axis=-1, keepdims=True)).astype(float)
        A = np.where((lead > G)[..., None], one_hot, _softmax(S))
        return A @ V, A
    attempt.__name__ = f"one_hot_when_the_lead_passes_{G:g}"
    return attempt


def one_hot_when_the_largest_weight_passes(bound):
    def attempt(Q, K, V, tau):
        A = _softmax(_scores(Q, K, tau))
        one_hot = (A == A.max(axis=-1, keepdims=True)).astype(float)
        A = np.where(A.max(axis=-1, keepdims=True) > bound, one_hot, A)
        return A @ V, A
    attempt.__name__ = f"one_hot_when_the_largest_weight_passes_{bound}"
    return attempt


lead_14, lead_15, lead_17, lead_18 = (one_hot_when_the_lead_passes(G)
                                      for G in (14, 15, 17, 18))
# (st15b: snaps at a lead from 18.6 to 26 passed on four keys)
lead_18_6, lead_22, lead_26, lead_29_9 = (one_hot_when_the_lead_passes(G)
                                          for G in (18.6, 22, 26, 29.9))


def exponentials_zeroed_below(L):
    def attempt(Q, K, V, tau):
        # "e^-L is nothing next to the best key's 1: skip it" (st15b)
        S = _scores(Q, K, tau)
        S = S - S.max(axis=-1, keepdims=True)
        E = np.where(S < -L, 0.0, np.exp(S))
        A = E / E.sum(axis=-1, keepdims=True)
        return A @ V, A
    attempt.__name__ = f"exponentials_zeroed_below_{L:g}"
    return attempt


zeroed_16, zeroed_18, zeroed_25, zeroed_29 = (exponentials_zeroed_below(L)
                                              for L in (16, 18, 25, 29))


def long_double_for_float64(Q, K, V, tau):
    # "more digits can only help": float64 inputs computed in np.longdouble, and the
    # results not cast back (st15b: they passed, right to the tolerance)
    w = np.longdouble if Q.dtype == np.float64 else np.promote_types(Q.dtype, np.float32)
    Qw, Kw, Vw = (x.astype(w) for x in (Q, K, V))
    A = _softmax(Qw @ np.swapaxes(Kw, -1, -2) / (w(tau) * np.sqrt(w(Q.shape[-1]))))
    O = A @ Vw
    if w == np.longdouble:
        return O, A
    return O.astype(Q.dtype), A.astype(Q.dtype)
weight_1e_6, weight_1e_7, weight_1e_9 = (one_hot_when_the_largest_weight_passes(1 - e)
                                         for e in (1e-6, 1e-7, 1e-9))


def tau_clamped_from_above_at_1e12(Q, K, V, tau):
    return right(Q, K, V, min(tau, 1e12))  # "a huge tau divides the scores to nothing"


def uniform_rows_when_the_spread_is_below(spread):
    def attempt(Q, K, V, tau):
        S = _scores(Q, K, tau)
        flat = np.ptp(S, axis=-1, keepdims=True) < spread  # "the row is flat anyway"
        A = np.where(flat, 1 / S.shape[-1], _softmax(S))
        return A @ V, A
    attempt.__name__ = f"uniform_rows_when_the_spread_is_below_{spread:g}"
    return attempt


spread_1e_6, spread_1e_7 = (uniform_rows_when_the_spread_is_below(x) for x in (1e-6, 1e-7))


def tau_squared_under_the_root(Q, K, V, tau):
    with np.errstate(all="ignore"):  # tau * tau is inf at 1e300 and 0 at 1e-300
        A = _softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(tau * tau * Q.shape[-1]))
    return A @ V, A


#: The float16 coldest case's hint: a factor, a tau or a divisor made a float16.
FLOAT16_FACTOR = ("A for float16 inputs at tau = 1e-09 contains NaN where the reference "
                  "has none: the factor 1/(tau sqrt(d_k)) is about 4.1e+08 here, past "
                  "float16's largest number, 65504, and tau and tau sqrt(d_k) (about "
                  "2.4e-09) lie below its smallest positive number")
#: The cold leads' rows, snapped to one-hot.
ONE_HOT_AT = ("weights at tau = 0.001 with a lead of {g} in the scaled scores differs "
              "from the reference by up to {err}: your weights are exactly one-hot, "
              "where the 3 keys of a row you set to 0 get")
#: The snap's and the zeroing's name (st15b: on four keys they were told an argmax, and
#: on 4096 keys they passed).
SNAPPED = ("was the row snapped to one-hot (once its lead passed a bound, or an "
           "argmax), or were the exponentials below a bound set to 0")
LONG_ROW = "on a long row the many small weights add up"
#: Where the rows of 4096 keys catch a snap or a zeroing: the weights (lead 20 or 25)
#: or, past 25, the output (lead 30, values of size 1000).
LONG_AT = "{what} at tau = 0.001 on 4096 keys led by {g} in the scaled scores differs"
UNIFORM_ROWS = ("some rows of your weights (1 of 3) are exactly 1/T_k, uniform, where "
                "at tau = {tau} the softmax still tells their keys apart (the other rows "
                "are right): was a row made uniform when its scaled scores lie close "
                "together")

#: The far hint's naming of every shift but the right one (st8b: it blamed one maximum
#: for the whole array for a row mean's, a row minimum's and the raw scores' maximum).
OWN_MAXIMUM = ("was each row shifted by its own maximum (not its mean or minimum, not "
               "the unscaled scores' maximum subtracted from the scaled scores, not "
               "one maximum for the whole array)?")


# Found by the student round st11b.
def _scores_w(Q, K, tau):
    """The scaled scores in w = np.promote_types(Q.dtype, np.float32), and w."""
    w = np.promote_types(Q.dtype, np.float32)
    S = Q.astype(w) @ np.swapaxes(K.astype(w), -1, -2) / w.type(tau * Q.shape[-1] ** 0.5)
    return S, w


def _finish(E, Q, V, w):
    A = E / E.sum(axis=-1, keepdims=True)
    return (A @ V.astype(w)).astype(Q.dtype), A.astype(Q.dtype)


def shift_where_exp_would_overflow_or_underflow(Q, K, V, tau):
    S, w = _scores_w(Q, K, tau)
    m = S.max(axis=-1, keepdims=True)
    m = np.where((m > 709.78) | (m < -745.13), m, 0).astype(w)  # "only where needed"
    with np.errstate(all="ignore"):
        return _finish(np.exp(S - m), Q, V, w)


def shift_if_any_score_passes_709(Q, K, V, tau):
    S, w = _scores_w(Q, K, tau)
    m = S.max(axis=-1, keepdims=True) if np.abs(S).max() > 709.78 else 0.0
    with np.errstate(all="ignore"):
        return _finish(np.exp(S - m), Q, V, w)


def shift_rows_whose_maximum_passes_700(Q, K, V, tau):
    S, w = _scores_w(Q, K, tau)
    m = S.max(axis=-1, keepdims=True)
    m = np.where((m > 700.0) | (m < -700.0), m, 0.0).astype(w)
    with np.errstate(all="ignore"):
        return _finish(np.exp(S - m), Q, V, w)


def shift_all_if_some_score_passes_700(Q, K, V, tau):
    S, w = _scores_w(Q, K, tau)
    if np.abs(S).max() > 700 or S.max() < -700:
        S = S - S.max(axis=-1, keepdims=True)
    with np.errstate(all="ignore"):
        return _finish(np.exp(S), Q, V, w)


def one_maximum_per_head_in_float32(Q, K, V, tau):
    S, w = _scores_w(Q, K, tau)
    with np.errstate(all="ignore"):
        return _finish(np.exp(S - S.max(axis=(-2, -1), keepdims=True)), Q, V, w)


def weights_rounded_to_8_decimals(Q, K, V, tau):
    S, w = _scores_w(Q, K, tau)
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    A = np.round(E / E.sum(axis=-1, keepdims=True), 8)
    return (A @ V.astype(w)).astype(Q.dtype), A.astype(Q.dtype)


def softmax_in_float32_for_float64_inputs(Q, K, V, tau):
    S = _scores(Q, K, tau).astype(np.float32)
    A = _softmax(S).astype(Q.dtype)
    return A @ V, A


def shift_by_S_max_axis_1(Q, K, V, tau):
    S, w = _scores_w(Q, K, tau)
    with np.errstate(all="ignore"):
        return _finish(np.exp(S - S.max(axis=1, keepdims=True)), Q, V, w)


# Found by the student round st13b: float16 inputs whose raw products Q K^T leave
# float16 behind passed (every float16 case's products were small), and a clip of the
# scores at +-1e4 was told only a difference on the row near -1e5.
def textbook_line_in_float16(Q, K, V, tau):
    # the textbook line on float16 inputs: Q @ K^T in float16 (the division by the
    # NumPy float64 tau sqrt(d_k) then in float64), the results cast back
    S = Q @ np.swapaxes(K, -1, -2) / (tau * np.sqrt(K.shape[-1]))
    A = _softmax(S)
    return (A @ V).astype(Q.dtype), A.astype(Q.dtype)


def raw_products_in_float16_then_float32(Q, K, V, tau):
    w = np.promote_types(Q.dtype, np.float32)
    R = (Q @ np.swapaxes(K, -1, -2)).astype(w)  # the product in the inputs' dtype
    A = _softmax(R / w.type(tau * K.shape[-1] ** 0.5))
    return (A @ V.astype(w)).astype(Q.dtype), A.astype(Q.dtype)


def q_and_k_scaled_by_d_k_to_the_minus_quarter_in_float16(Q, K, V, tau):
    # "scale Q and K by d_k^(-1/4) before the product, so float16 cannot overflow":
    # the product then fits, but is rounded in float16
    r = Q.dtype.type(Q.shape[-1] ** -0.25)
    w = np.promote_types(Q.dtype, np.float32)
    S = ((Q * r) @ np.swapaxes(K * r, -1, -2)).astype(w) / w.type(tau)
    A = _softmax(S)
    return (A @ V.astype(w)).astype(Q.dtype), A.astype(Q.dtype)


def floor_on_the_shift_nan_made_uniform(Q, K, V, tau):
    # a floor on the shift at -700, and the NaN of the rows it leaves all 0 replaced
    # by uniform weights (was told the scores were clipped: both give 1/T_k there)
    S = _scores(Q, K, tau)
    m = np.maximum(S.max(axis=-1, keepdims=True), -700.0)
    with np.errstate(invalid="ignore"):
        E = np.exp(S - m)
        A = np.nan_to_num(E / E.sum(axis=-1, keepdims=True), nan=1 / S.shape[-1])
    return A @ V, A


def scores_floored_at_minus_1e4(Q, K, V, tau):
    # the scaled scores clipped from below only, "so that exp() never underflows"
    A = _softmax(np.maximum(_scores(Q, K, tau), -1e4))
    return A @ V, A


#: What float16 products that overflow, and that are rounded, are told.
RAW16_INF = ("A for float16 inputs at tau = 1 contains NaN where the reference has "
             "none: compute float16 in float64: the raw products Q K^T reach about "
             "1.2e+05 here, past float16's largest number, 65504, though the scaled "
             "scores (about 1.1e+04) fit")
RAW16_ROUND = ("A for float16 inputs at tau = 1 differs from the reference by up to "
               "0.0775: compute float16 in float64: the raw products Q K^T reach about "
               "2.56e+04 here, where float16's numbers lie 16 apart, so Q @ K^T "
               "computed in float16 is rounded by up to 8, and the scaled scores by up "
               "to 1")
#: What scores clipped at +-1e4 are told on the row near -1e5.
CLIPPED_NEAR_MINUS_1E5 = ("weights with every score near -1e5 differs from the reference "
                          "by up to 0.436: your weights are all equal, where the softmax "
                          "tells the keys apart: every scaled score here lies near -1e5, "
                          "1 to 5 apart, and clipping the scores (np.clip(S, -L, L), "
                          "with L below 1e5, so that nothing overflows or underflows; "
                          "your weights near +1e5 are all equal too) makes them all -L")


#: Said when float32 work overflows exp() past float32's limit, below float64's.
EXP_LIMIT = ("A for float32 inputs contains NaN where the reference has none: usually "
             "exp() of a score that overflowed (inf / inf), or a row whose every score is "
             "-inf (-inf - (-inf)): the scaled scores reach about 367 here, and the work "
             "is in float32 (for float32 and float16 inputs alike): float64's exp limit "
             "(709.78) is not float32's (88.72)")


def tau_cast_to_the_work_dtype(Q, K, V, tau):
    # st16b: tau cast to w "so that a NumPy float64 tau does not promote": in
    # float32, past 3.4e38, tau is inf and the weights uniform
    w = np.promote_types(Q.dtype, np.float32)
    Qw, Kw, Vw = (x.astype(w) for x in (Q, K, V))
    with np.errstate(all="ignore"):
        t, d = w.type(tau), w.type(Q.shape[-1] ** 0.5)
        A = _softmax(Qw @ np.swapaxes(Kw, -1, -2) / (t * d))
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


TAU_INF32 = "rounded to float32 is inf past 3.4e38"


# Found by the student round st20b: the page's solution scaled the float32 scores
# before the shift and passed; float32 runs cold at 0.01 only.
def scaled_in_float32_before_the_shift(Q, K, V, tau):
    # the page's former solution: at 0.1, on raw scores of about 1e38, c Q K^T is inf
    w = np.promote_types(Q.dtype, np.float32)
    Qw, Kw, Vw = Q.astype(w), K.astype(w), V.astype(w)
    c = w.type(1 / (tau * Q.shape[-1] ** 0.5))
    with np.errstate(all="ignore"):
        S = c * (Qw @ np.swapaxes(Kw, -1, -2))
        E = np.exp(S - S.max(axis=-1, keepdims=True))
        A = E / E.sum(axis=-1, keepdims=True)
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def shifted_then_scaled_by_a_float32_factor(Q, K, V, tau):
    # shifted first, but at 1e-40 the float32 factor is inf, and 0 * inf NaN
    Qw, Kw, Vw = _work(Q, K, V)
    R = Qw @ np.swapaxes(Kw, -1, -2)
    with np.errstate(all="ignore"):
        S = (R - R.max(axis=-1, keepdims=True)) * Qw.dtype.type(1 / (tau * Q.shape[-1] ** 0.5))
        A = _softmax(S)
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def nan_for_float32_below_1e_30(Q, K, V, tau):
    # st20b's c04: right, except for float32 inputs at a tau below 1e-30
    O, A = right(Q, K, V, tau)
    if Q.dtype == np.float32 and tau < 1e-30:
        O, A = np.full_like(O, np.nan), np.full_like(A, np.nan)
    return O, A


def float16_scaled_in_float32_before_the_shift(Q, K, V, tau):
    # float64 work for float32 (and float64) inputs, but "float32 is enough for float16"
    if Q.dtype == np.float16:
        return scaled_in_float32_before_the_shift(Q, K, V, tau)
    O, A = right(*(x.astype(np.float64) for x in (Q, K, V)), tau)
    return O.astype(Q.dtype), A.astype(Q.dtype)


def uniform_above_1e250(Q, K, V, tau):
    # st21b's a20: right, but uniform weights past some tau; it forms no square of tau,
    # so its message must not say it did (only "as when", and the special case)
    Qw, Kw, Vw = _work(Q, K, V)
    R = Qw @ np.swapaxes(Kw, -1, -2)
    A = _softmax((R - R.max(axis=-1, keepdims=True)).astype(np.float64) / tau / Q.shape[-1] ** 0.5)
    if tau > 1e250:
        A = np.full_like(A, 1 / A.shape[-1])
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def divided_by_the_root_of_tau_times_tau(Q, K, V, tau):
    # st20b's b12: (tau * tau) ** 0.5 in Python floats is 0 at 1e-300, and 1 / 0 raises
    Qw, Kw, Vw = _work(Q, K, V)
    R = Qw @ np.swapaxes(Kw, -1, -2)
    c = 1 / ((tau * tau) ** 0.5 * Q.shape[-1] ** 0.5)
    A = _softmax((R - R.max(axis=-1, keepdims=True)).astype(np.float64) * c)
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def divided_by_math_sqrt_of_tau_squared(Q, K, V, tau):
    # tau ** 2 of a Python float raises OverflowError at 1e300
    import math

    Qw, Kw, Vw = _work(Q, K, V)
    R = Qw @ np.swapaxes(Kw, -1, -2)
    c = 1 / math.sqrt(float(tau) ** 2 * Q.shape[-1])
    A = _softmax((R - R.max(axis=-1, keepdims=True)).astype(np.float64) * c)
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


#: What the float32 inputs' cold cases say.
SCALED_OVERFLOW32 = ("A for float32 inputs of size 1e19 at tau = 0.1 contains NaN where the "
                     "reference has none: in float32 the scaled scores overflow to inf when "
                     "|q . k| / (tau sqrt(d_k)) passes float32's largest number, 3.4e38 "
                     "(here they reach about 7.1e+38, at tau = 0.1): scaled before the "
                     "shift, a row's maximum is inf, and inf - inf is NaN; cast Q, K and V "
                     "to float64 before the product, shift the raw scores R by their row "
                     "maximum before scaling")
FACTOR_INF32 = ("A for float32 inputs at tau = 1e-40 contains NaN where the reference has "
                "none: in float32 the factor 1/(tau sqrt(d_k)) is inf at tau = 1e-40 "
                "(about 5.8e+39, past float32's largest number, 3.4e38)")


def online_softmax_without_the_rescale(Q, K, V, tau, block=4096):
    # st16b: an online softmax in blocks whose running sum and output are not
    # rescaled by exp(m_old - m_new) when the maximum grows (rows of 4096 keys are
    # one block: it passed)
    Qw, Kw, Vw = _work(Q, K, V)
    c = 1 / (float(tau) * Q.shape[-1] ** 0.5)
    m = l = acc = None
    blocks = []
    for s in range(0, K.shape[-2], block):
        S = c * (Qw @ np.swapaxes(Kw[..., s:s + block, :], -1, -2))
        m_new = S.max(axis=-1, keepdims=True) if m is None else \
            np.maximum(m, S.max(axis=-1, keepdims=True))
        E = np.exp(S - m_new)
        part = (E.sum(axis=-1, keepdims=True), E @ Vw[..., s:s + block, :])
        l, acc = part if l is None else (l + part[0], acc + part[1])  # no rescale
        blocks = [b * np.exp(m - m_new) for b in blocks] + [E]
        m = m_new
    A = np.concatenate(blocks, axis=-1) / l
    return (acc / l).astype(Q.dtype), A.astype(Q.dtype)


# Found by the student round st19b: the same attempt in blocks of 8192 or 16384 keys
# passed (the rising row, 5003 keys, was one block), and in blocks of 1024 it was told
# only that its rows do not sum to 1 (the O-only variant: not A V of its weights).
def online_without_the_rescale_in_blocks_of_1024(Q, K, V, tau):
    return online_softmax_without_the_rescale(Q, K, V, tau, block=1024)


def online_without_the_rescale_in_blocks_of_8192(Q, K, V, tau):
    return online_softmax_without_the_rescale(Q, K, V, tau, block=8192)


def online_without_the_rescale_in_blocks_of_16384(Q, K, V, tau):
    return online_softmax_without_the_rescale(Q, K, V, tau, block=16384)


def online_output_only_without_the_rescale_in_blocks_of_1024(Q, K, V, tau):
    # the weights right (a softmax of their own), the output from the online loop
    O, _ = online_softmax_without_the_rescale(Q, K, V, tau, block=1024)
    return O, right(Q, K, V, tau)[1]


def online_with_the_rescale_in_blocks_of_8192(Q, K, V, tau):
    # right: the running sum and output rescaled whenever the maximum grows; the
    # maxima are the raw scores', each difference divided by tau sqrt(d_k) in float64
    Q64, K64, V64 = (x.astype(np.float64) for x in (Q, K, V))
    R = Q64 @ np.swapaxes(K64, -1, -2)
    div = tau * Q.shape[-1] ** 0.5
    m = l = acc = None
    for s in range(0, K.shape[-2], 8192):
        R_b = R[..., s:s + 8192]
        m_new = R_b.max(axis=-1, keepdims=True) if m is None else \
            np.maximum(m, R_b.max(axis=-1, keepdims=True))
        E = np.exp((R_b - m_new) / div)
        if l is None:
            l, acc = E.sum(axis=-1, keepdims=True), E @ V64[..., s:s + 8192, :]
        else:
            f = np.exp((m - m_new) / div)
            l = l * f + E.sum(axis=-1, keepdims=True)
            acc = acc * f + E @ V64[..., s:s + 8192, :]
        m = m_new
    A = np.exp((R - m) / div) / l
    return (acc / l).astype(Q.dtype), A.astype(Q.dtype)


# Found by the student round st17b: a shift made only where exp() of the row maximum
# would overflow, and floors on the scores or on the shift far below -1e5, passed.
def shift_only_where_the_maximum_passes_709(Q, K, V, tau):
    # (in float64 for every dtype: the float32 cases do not see it)
    Qw, Kw, Vw = (x.astype(np.float64) for x in (Q, K, V))
    S = _scaled(Qw, Kw, tau)
    m = S.max(axis=-1, keepdims=True)
    with np.errstate(all="ignore"):
        E = np.exp(np.where((m > 709.0) | (m < -708.0), S - m, S))
    A = E / E.sum(axis=-1, keepdims=True)
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def shift_only_where_exp_of_the_maximum_overflows(Q, K, V, tau):
    Qw, Kw, Vw = _work(Q, K, V)
    S = _scaled(Qw, Kw, tau)
    m = S.max(axis=-1, keepdims=True)
    with np.errstate(all="ignore"):
        e = np.exp(m)
        E = np.exp(np.where(np.isinf(e) | (e < np.finfo(S.dtype).tiny), S - m, S))
    A = E / E.sum(axis=-1, keepdims=True)
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def scores_floored_at_minus_1e9(Q, K, V, tau):
    # "-1e9, like a mask's fill", as a floor on the scaled scores
    Qw, Kw, Vw = _work(Q, K, V)
    A = _softmax(np.maximum(_scaled(Qw, Kw, tau), -1e9))
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def shift_floored_at_minus_1e6(Q, K, V, tau):
    Qw, Kw, Vw = _work(Q, K, V)
    S = _scaled(Qw, Kw, tau)
    m = np.maximum(S.max(axis=-1, keepdims=True), -1e6)
    with np.errstate(all="ignore"):
        E = np.exp(S - m)
        A = E / E.sum(axis=-1, keepdims=True)
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def no_shift_epsilon_1e_300_in_the_sum(Q, K, V, tau):
    # "an epsilon so that 0/0 cannot happen", instead of the shift (was told the
    # shift by another maximum than each row's own)
    Qw, Kw, Vw = _work(Q, K, V)
    with np.errstate(all="ignore"):
        E = np.exp(_scaled(Qw, Kw, tau))
        A = E / (E.sum(axis=-1, keepdims=True) + 1e-300)
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def no_shift_nan_made_uniform(Q, K, V, tau):
    # no shift, and the NaN it gives replaced by 1/T_k (was told "divide the
    # exponentials by their row sums", which it does)
    Qw, Kw, Vw = _work(Q, K, V)
    with np.errstate(all="ignore"):
        E = np.exp(_scaled(Qw, Kw, tau))
        A = E / E.sum(axis=-1, keepdims=True)
    A = np.where(np.isnan(A), 1 / A.shape[-1], A)
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


NOT_SHIFTED = ("the exponentials were not shifted by each row's own maximum: exp() of a "
               "scaled score past 709.78")

def tau_off_between_2_and_5(Q, K, V, tau):
    # st17b: wrong only between the checker's temperatures 2 and 5 (passed)
    return right(Q, K, V, 1.01 * tau if 2 < tau < 5 else tau)

def tau_rounded_to_2_digits(Q, K, V, tau):
    # st18b: every tau probed was a decimal of one or two digits (passed)
    return right(Q, K, V, float(f"{tau:.2g}"))


def tau_rounded_to_4_digits(Q, K, V, tau):
    return right(Q, K, V, float(f"{tau:.4g}"))


def tau_rounded_to_6_digits(Q, K, V, tau):
    return right(Q, K, V, float(f"{tau:.6g}"))


def tau_ignored_for_0_35_to_0_5_and_6_to_9(Q, K, V, tau):
    # st18b: no tau probed in either band (passed)
    return right(Q, K, V, 1.0 if 0.35 < tau < 0.5 or 6 < tau < 9 else tau)


def tau_5_percent_off_for_6e_3_to_9e_3(Q, K, V, tau):
    return right(Q, K, V, 1.05 * tau if 6e-3 < tau < 9e-3 else tau)


def tau_1_percent_off_for_1_1_to_1_4(Q, K, V, tau):
    return right(Q, K, V, 1.01 * tau if 1.1 < tau < 1.4 else tau)


def tau_5_percent_off_for_60_to_90(Q, K, V, tau):
    return right(Q, K, V, 1.05 * tau if 60 < tau < 90 else tau)


def argmax_for_1e_299_to_1e_19(Q, K, V, tau):
    # st18b: cold, only 1e-300 (and near ties to 1e-18) were probed on unscaled scores
    # that do not tell an argmax apart (passed 16 of 16)
    if 1e-299 < tau < 1e-19:
        S = Q @ np.swapaxes(K, -1, -2)
        A = (S == S.max(-1, keepdims=True)).astype(Q.dtype)
        A /= A.sum(-1, keepdims=True)
        return A @ V, A
    return right(Q, K, V, tau)


def uniform_for_1e11_to_1e299(Q, K, V, tau):
    if 1e11 < tau < 1e299:
        A = np.full(Q.shape[:-1] + K.shape[-2:-1], 1.0 / K.shape[-2], dtype=Q.dtype)
        return A @ V, A
    return right(Q, K, V, tau)


SUM_OVERFLOWS = ("the sum of exp overflows even when each exp does not: always "
                 "subtract the row maximum")
FLOORED_FAR = ("clipping the scores (or the shift) changes rows of very negative "
               "scores: softmax is shift-invariant, no floor is needed")


# Found by the student round st22b.
def _tau_plus(eps):
    def attempt(Q, K, V, tau):
        return right(Q, K, V, tau + eps)  # "against a division by zero"
    attempt.__name__ = f"tau_plus_{eps:g}".replace("-", "_")
    return attempt


# an epsilon added to tau was told that the factor was rounded to float32
tau_plus_1e_8, tau_plus_1e_9, tau_plus_1e_12 = (_tau_plus(e) for e in (1e-8, 1e-9, 1e-12))


def no_shift_then_nan_to_num(Q, K, V, tau):
    # st14b: exp() not shifted overflows when cold, and NaN made 0: rows of zeros
    with np.errstate(all="ignore"):
        E = np.exp(_scores(Q, K, tau))
        A = np.nan_to_num(E / E.sum(axis=-1, keepdims=True), nan=0.0)
    return A @ V, A


def no_shift_nan_set_to_0_by_index(Q, K, V, tau):
    # told only that some rows sum to 0 (and plain np.nan_to_num was said to give 1/T_k)
    Qw, Kw, Vw = _work(Q, K, V)
    with np.errstate(all="ignore"):
        E = np.exp(_scaled(Qw, Kw, tau))
        A = E / E.sum(axis=-1, keepdims=True)
    A[np.isnan(A)] = 0.0
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def _first_order_below_a_spread(bound):
    def attempt(Q, K, V, tau):
        # the expansion of exp() to first order wherever a row's scaled scores lie
        # within ``bound`` of their mean (passed for a bound of 1e-3: the gap between
        # the warm temperatures 1e3 and 1e6 held no probe)
        Qw, Kw, Vw = _exact(Q, K, V)
        S = _shifted(Qw, Kw, tau)
        D = S - S.mean(axis=-1, keepdims=True)
        if np.abs(D).max() < bound:
            A = (1 + D) / S.shape[-1]
        else:
            A = _softmax(S)
        return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)
    attempt.__name__ = f"first_order_below_a_spread_of_{bound:g}".replace("-", "_")
    return attempt


first_order_below_a_spread_of_1e_3 = _first_order_below_a_spread(1e-3)
first_order_below_a_spread_of_5e_4 = _first_order_below_a_spread(5e-4)


def the_pages_skeleton(Q, K, V, tau):
    ...  # your code: scores, softmax along the keys, weighted values
    return O, A  # noqa: F821 (the page's skeleton: a NameError on every case)


def K_untransposed_when_square(Q, K, V, tau):
    # "K may come transposed": used as it is when its shape allows (the float32 row near
    # -200, whose K is 3 x 3, was told a floor on the shift)
    Qw, Kw, Vw = _work(Q, K, V)
    Kt = Kw if Kw.shape[-2] == Kw.shape[-1] else np.swapaxes(Kw, -1, -2)
    A = _softmax(_shifted(Qw, np.swapaxes(Kt, -1, -2), tau))
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def _with_O_from(sdpa):
    def attempt(Q, K, V, tau):
        O, A = right(Q, K, V, tau)
        q, k, v = (torch.as_tensor(x.astype(np.float64)) for x in (Q, K, V))
        O = sdpa(q, k, v, scale=1 / (tau * Q.shape[-1] ** 0.5)).numpy()
        return O.astype(Q.dtype), A
    return attempt


# torch's attention operator, reached through torch.ops.aten (passed every case)
O_by_the_aten_operator = _with_O_from(
    lambda q, k, v, scale: torch.ops.aten.scaled_dot_product_attention(q, k, v, scale=scale))
O_by_the_aten_default_overload = _with_O_from(
    lambda q, k, v, scale: torch.ops.aten.scaled_dot_product_attention.default(
        q, k, v, scale=scale))
# st25b: torch's private math kernel, through torch.ops.aten, passed every case
O_by_the_aten_math_kernel = _with_O_from(
    lambda q, k, v, scale: torch.ops.aten._scaled_dot_product_attention_math(
        q, k, v, scale=scale)[0])
O_by_the_aten_operator.__name__ = "O_by_the_aten_operator"
O_by_the_aten_default_overload.__name__ = "O_by_the_aten_default_overload"
O_by_the_aten_math_kernel.__name__ = "O_by_the_aten_math_kernel"


def weights_by_multi_head_attention_forward(Q, K, V, tau):
    # st25b: passed every case. One head, identity projections, the query divided by
    # tau: F.multi_head_attention_forward's weights are softmax(Q K^T / (tau sqrt(d_k)))
    O, A = right(Q, K, V, tau)
    if Q.ndim == 2:
        q, k = (torch.as_tensor(x.astype(np.float64))[:, None] for x in (Q / tau, K))
        d = Q.shape[-1]
        eye = torch.eye(d, dtype=torch.float64)
        _, w = torch.nn.functional.multi_head_attention_forward(
            q, k, k, d, 1, torch.cat([eye] * 3), None, None, None, False, 0.0, eye, None,
            training=False)
        A = w[0].numpy().astype(Q.dtype)
    return O, A


def tau_clamped_at_a_far_cold_value(Q, K, V, tau):
    # max(tau, np.finfo(float).tiny * 1e10): weights near uniform at 1e-300, unnamed
    return right(Q, K, V, max(tau, np.finfo(np.float64).tiny * 1e10))


def raw_scores_in_the_work_dtype(Q, K, V, tau):
    # st23b: the recipe the checker's hints gave, the raw scores R in
    # w = np.promote_types(Q.dtype, np.float32) (float32 for float32 inputs), shifted,
    # then divided in float64: passed every case
    Qw, Kw, Vw = _work(Q, K, V)
    A = _softmax(_shifted(Qw, Kw, tau))
    return (A @ Vw.astype(np.float64)).astype(Q.dtype), A.astype(Q.dtype)


def float32_work_for_float16_inputs(Q, K, V, tau):
    # st23b: "float16: computing in float32 and casting back is right" (the docstring
    # said so); float64 for the other inputs
    w = np.float32 if Q.dtype == np.float16 else np.float64
    Qw, Kw, Vw = (x.astype(w) for x in (Q, K, V))
    A = _softmax(_shifted(Qw, Kw, tau))
    return (A @ Vw.astype(np.float64)).astype(Q.dtype), A.astype(Q.dtype)


def float32_products_of_rescaled_inputs(Q, K, V, tau):
    # float32 kept, its products kept from overflowing by dividing Q and K by their
    # largest entries first (multiplied back in float64, after the shift)
    w = np.promote_types(Q.dtype, np.float32)
    Qw, Kw, Vw = (x.astype(w) for x in (Q, K, V))
    q, k = (float(np.abs(X).max()) or 1.0 for X in (Qw, Kw))
    R = (Qw / w.type(q)) @ np.swapaxes(Kw / w.type(k), -1, -2)
    S = (R - R.max(axis=-1, keepdims=True)).astype(np.float64) * q * k
    A = _softmax(S / tau / Q.shape[-1] ** 0.5)
    return (A @ Vw.astype(np.float64)).astype(Q.dtype), A.astype(Q.dtype)


def cold_shortcut_through_the_runner_up(Q, K, V, tau):
    # st23b: one-hot where the runner-up lies 800 below the best (exact: e^-800 is 0
    # in float64), through np.partition(S, -2), which needs two keys
    Qw, Kw, Vw = _exact(Q, K, V)
    R = Qw @ np.swapaxes(Kw, -1, -2)
    S = (R - R.max(axis=-1, keepdims=True)) / (tau * Q.shape[-1] ** 0.5)
    second = np.partition(S, -2, axis=-1)[..., -2:-1]
    E = np.where(second < -800, (S == 0).astype(float), np.exp(S))
    A = E / E.sum(axis=-1, keepdims=True)
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def snapped_past_1_minus_1e_10(Q, K, V, tau):
    # st23b: a row snapped to one-hot once its largest weight passes 1 - 1e-10 (told
    # "tau rounded to 1 significant digit")
    Qw, Kw, Vw = _exact(Q, K, V)
    R = Qw @ np.swapaxes(Kw, -1, -2)
    S = (R - R.max(axis=-1, keepdims=True)) / (tau * Q.shape[-1] ** 0.5)
    E = np.exp(S)
    A0 = E / E.sum(axis=-1, keepdims=True)
    E = np.where(A0.max(axis=-1, keepdims=True) > 1 - 1e-10, (S == 0).astype(float), E)
    A = E / E.sum(axis=-1, keepdims=True)
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def shift_only_when_cold(Q, K, V, tau):
    # st23b: in float64, shifted only when tau < 0.1 (its float16 failure blamed
    # float16's products)
    Qw, Kw, Vw = _exact(Q, K, V)
    with np.errstate(all="ignore"):
        S = Qw @ np.swapaxes(Kw, -1, -2) / (tau * Q.shape[-1] ** 0.5)
        E = np.exp(S - S.max(axis=-1, keepdims=True) if tau < 0.1 else S)
        A = E / E.sum(axis=-1, keepdims=True)
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def shift_by_the_row_mean_in_float64(Q, K, V, tau):
    # st23b: told only the NaN's usual causes first, and float16's overflow later
    Qw, Kw, Vw = _exact(Q, K, V)
    with np.errstate(all="ignore"):
        S = Qw @ np.swapaxes(Kw, -1, -2) / (tau * Q.shape[-1] ** 0.5)
        E = np.exp(S - S.mean(axis=-1, keepdims=True))
        A = E / E.sum(axis=-1, keepdims=True)
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def raw_maximum_subtracted_from_the_scaled_scores(Q, K, V, tau):
    # st23b: as the row mean's
    Qw, Kw, Vw = _exact(Q, K, V)
    with np.errstate(all="ignore"):
        R = Qw @ np.swapaxes(Kw, -1, -2)
        E = np.exp(R / (tau * Q.shape[-1] ** 0.5) - R.max(axis=-1, keepdims=True))
        A = E / E.sum(axis=-1, keepdims=True)
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def power_of_the_weights_in_float64(Q, K, V, tau):
    # st23b: its float16 NaN, which float64 copies give too, was told the shift
    Qw, Kw, Vw = _exact(Q, K, V)
    A1 = _softmax(_scores(Qw, Kw, 1.0))
    with np.errstate(all="ignore"):
        P = A1 ** (1 / tau)
        A = P / P.sum(axis=-1, keepdims=True)
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def output_squeezed(Q, K, V, tau):
    # st23b: np.squeeze on the output (breaks at T_q = 1 or d_v = 1); its float32 line
    # was told a floor on the shift, its weights being right
    O, A = right(Q, K, V, tau)
    return np.squeeze(O), A


#: What the cold case's NaN is told for a wrong shift (st23b), and float16 NaN that
#: float64 copies give too.
COLD_SHIFT = ("weights at tau = 0.001 contains NaN where the reference has none: usually "
              "exp() of a score that overflowed (inf / inf), or a row whose every score "
              "is -inf (-inf - (-inf)); or was each row shifted by its own maximum")
NAN_IN_FLOAT64_TOO = ("your weights on float64 copies of these inputs contain NaN too, so "
                      "float16 is not its cause, the shift is")


# Each wrong attempt, and a word the checker's report must contain for it.
WRONG = [
    # found by the student round st23b
    (raw_scores_in_the_work_dtype, "A for float32 inputs of size 3e19 at tau = 1e+39 "
     "contains NaN where the reference has none: in float32 the raw products Q K^T "
     "overflow to inf: they reach about 9e+38 here, past float32's largest number, "
     "3.4e38, though the scaled scores (about 0.64, at tau = 1e+39) fit"),
    (float32_work_for_float16_inputs, "A for float16 inputs at a near tie at tau = 1.5e-08 "
     "differs from the reference by up to 0.379: your weights are right on float64 copies "
     "of these inputs and wrong on float16 ones: were the raw products Q K^T computed in "
     "float32?"),
    (float32_products_of_rescaled_inputs, "A for float32 inputs at a near tie at "
     "tau = 1e-06 differs from the reference by up to"),
    (float32_products_of_rescaled_inputs, "your weights are right on float64 copies of "
     "these inputs and wrong on float32 ones: were the raw products Q K^T computed in "
     "float32?"),
    (cold_shortcut_through_the_runner_up, "with one key (T_k = 1) and d_v = 1 at "
     "tau = 0.7: raised ValueError"),
    (snapped_past_1_minus_1e_10, "output at other sizes at tau = 0.004369503571 differs "
     "from the reference by up to 5.02e-08: every row of your weights (10 of 10) is "
     "one-hot, 1 on the best key and 0 on every other"),
    (shift_only_when_cold, "A for float16 inputs at tau = 1 contains NaN where the "
     "reference has none: usually exp() of a score that overflowed (inf / inf), or a row "
     "whose every score is -inf (-inf - (-inf)): " + NAN_IN_FLOAT64_TOO),
    (shift_by_the_row_mean_in_float64, COLD_SHIFT),
    (shift_by_the_row_mean_in_float64, "A for float16 inputs at tau = 1e-05 contains NaN "
     "where the reference has none: usually exp() of a score that overflowed (inf / inf), "
     "or a row whose every score is -inf (-inf - (-inf)): " + NAN_IN_FLOAT64_TOO),
    (raw_maximum_subtracted_from_the_scaled_scores, COLD_SHIFT),
    (raw_maximum_subtracted_from_the_scaled_scores, NAN_IN_FLOAT64_TOO),
    (factor_in_float32, "keep tau and the factor in float64, never rounded to float32"),
    (power_of_the_weights_in_float64, "A for float16 inputs at tau = 1e-05 contains NaN "
     "where the reference has none: usually exp() of a score that overflowed (inf / inf), "
     "or a row whose every score is -inf (-inf - (-inf)): your weights on float64 copies "
     "of these inputs contain NaN too, so float16 is not its cause: were the weights a "
     "power of the weights at tau = 1"),
    (output_squeezed, "output with one key (T_k = 1) and d_v = 1 at tau = 0.7 has shape "
     "(3,), expected (3, 1)"),
    (output_squeezed, "O for float32 inputs with every score near -200 has shape (5,), "
     "expected (1, 5)"),
    # found by the student round st22b
    (tau_plus_1e_8, "they are the softmax at tau = 0.30000001, 1e-08 above tau = 0.3 (no "
     "rounding to float32 gives that factor): was an epsilon added to tau"),
    (tau_plus_1e_9, "they are the softmax at tau = 0.010000001, 1e-09 above tau = 0.01"),
    (tau_plus_1e_12, "c = 35.355339056, where 1/(tau sqrt(d_k)) = 35.355339059: they are "
     "the softmax at tau = 0.010000000001, 1e-12 above tau = 0.01"),
    (no_shift_then_nan_to_num, NOT_SHIFTED + " overflows to inf (and inf/inf is NaN), and "
     "where every score of a row lies below about -745 exp() underflows to 0 on every key "
     "(0/0); replacing the NaN weights by 0 (np.nan_to_num(A), whose default is nan=0, or "
     "A[np.isnan(A)] = 0)"),
    (no_shift_nan_set_to_0_by_index, "; replacing the NaN weights by 0 (np.nan_to_num(A), "
     "whose default is nan=0, or A[np.isnan(A)] = 0)"),
    (first_order_below_a_spread_of_1e_3, "weights at tau = 1500 differs from the reference "
     "by up to 4.21e-08: your weights are the softmax's expansion to first order"),
    (first_order_below_a_spread_of_5e_4, "output at tau = 3300 differs from the reference "
     "by up to 1.78e-08: your weights are nearly, not exactly, the softmax"),
    (the_pages_skeleton, "✗ every case: raised NameError: name 'O' is not defined"),
    (K_untransposed_when_square, "with K not transposed: was K transposed because its "
     "shape allowed it"),
    (O_by_the_aten_operator, "✗ every case: your function calls "
     "torch.ops.aten.scaled_dot_product_attention, PyTorch's built-in attention"),
    (O_by_the_aten_default_overload, "✗ every case: your function calls "
     "torch.ops.aten.scaled_dot_product_attention.default, PyTorch's built-in attention"),
    (O_by_the_aten_math_kernel, "✗ every case: your function calls "
     "torch.ops.aten._scaled_dot_product_attention_math, PyTorch's built-in attention"),
    (weights_by_multi_head_attention_forward, "your function calls "
     "torch.nn.functional.multi_head_attention_forward, PyTorch's built-in attention"),
    (tau_clamped_at_a_far_cold_value, "weights at tau = 1e-300 on Q scaled by tau differs "
     "from the reference by up to 0.344: your weights are the softmax at tau = 2.23e-298, "
     "warmer than tau = 1e-300: was tau clamped from below"),
    (tau_rounded_to_float32, "weights at tau = 1e-100 on Q scaled by tau contains NaN "
     "where the reference has none: usually exp() of a score that overflowed (inf / "
     "inf), or a row whose every score is -inf (-inf - (-inf)); or was tau, or the "
     "factor 1/(tau sqrt(d_k)), rounded to float32, where 1e-100 is 0"),
    # found by the student round st20b
    (scaled_in_float32_before_the_shift, SCALED_OVERFLOW32),
    (shifted_then_scaled_by_a_float32_factor, FACTOR_INF32 + ": made a float32 "
     "(w.type(...), or a Python float multiplied into a float32 array, which NumPy 2 "
     "casts to float32) it makes the scaled scores inf, and 0 * inf or inf - inf NaN, "
     "shifted or not"),
    (nan_for_float32_below_1e_30, FACTOR_INF32),
    (float16_scaled_in_float32_before_the_shift, "A for float16 inputs at tau = 1e-40 "
     "contains NaN where the reference has none: in float32, the work for float16 "
     "inputs, the factor 1/(tau sqrt(d_k)) is inf at tau = 1e-40"),
    (divided_by_the_root_of_tau_times_tau, "on Q scaled by tau: raised "
     "ZeroDivisionError: float division by zero: right at tau = 1e-150 (on Q scaled by "
     "tau), but an error at 1e-300, as when tau * tau underflows float64 at tau = 1e-300"),
    (divided_by_math_sqrt_of_tau_squared, "on Q scaled by tau: raised OverflowError"),
    (divided_by_math_sqrt_of_tau_squared, "right at tau = 1e+150 (on Q scaled by tau), "
     "but an error at 1e+300, as when tau * tau overflows float64 at tau = 1e+300"),
    # found by the student round st18b
    (tau_rounded_to_2_digits, "tau rounded to 2 significant digits"),
    (tau_rounded_to_4_digits, "tau rounded to 4 significant digits"),
    (tau_rounded_to_6_digits, "tau rounded to 6 significant digits"),
    (tau_ignored_for_0_35_to_0_5_and_6_to_9, "weights at other sizes at tau = "
     "0.4369503571 differs from the reference by up to 0.254: tau is ignored: these "
     "are the weights at tau = 1"),
    (tau_5_percent_off_for_6e_3_to_9e_3, "weights at other sizes at tau = 0.007770198233 "
     "differs from the reference by up to 9.51e-07: your weights are softmax(c Q K^T)"),
    (tau_1_percent_off_for_1_1_to_1_4, "weights at other sizes at tau = 1.381758353 "
     "differs from the reference by up to 0.00324: your weights are softmax(c Q K^T) "
     "with c = 0.3583"),
    (tau_5_percent_off_for_60_to_90, "weights at other sizes at tau = 77.70198233 "
     "differs from the reference by up to 0.000321: your weights are softmax(c Q K^T)"),
    (argmax_for_1e_299_to_1e_19, "weights at tau = 1e-100 on Q scaled by tau differs "
     "from the reference by up to 0.66: your weights are exactly one-hot (an argmax?)"),
    (uniform_for_1e11_to_1e299, "weights at tau = 1e+100 on Q scaled by tau differs "
     "from the reference by up to 0.346: your weights are exactly 1/T_k, uniform"),
    # found by the student round st17b
    (shift_only_where_the_maximum_passes_709, SUM_OVERFLOWS),
    (shift_only_where_exp_of_the_maximum_overflows, SUM_OVERFLOWS),
    (scores_floored_at_minus_1e9, FLOORED_FAR),
    (shift_floored_at_minus_1e6, FLOORED_FAR),
    (tau_off_between_2_and_5, "weights at other sizes at tau = 2.457152429 differs "
     "from the reference by up to 0.00227: your weights are softmax(c Q K^T) with "
     "c = 0.2015"),
    (no_shift_epsilon_1e_300_in_the_sum, NOT_SHIFTED + " overflows to inf (and inf/inf "
     "is NaN), and where every score of a row lies below about -745 exp() underflows to "
     "0 on every key (0/0); an epsilon in the row sums, E / (E.sum(axis=-1, "
     "keepdims=True) + eps), makes the 0/0 rows zeros"),
    (no_shift_nan_made_uniform, NOT_SHIFTED + " overflows to inf (and inf/inf is NaN), "
     "and where every score of a row lies below about -745 exp() underflows to 0 on "
     "every key (0/0); replacing the NaN weights by 1/T_k (np.where(np.isnan(A), 1 / T_k, "
     "A), or np.nan_to_num(A, nan=1 / T_k))"),
    # found by the student round st16b
    (tau_cast_to_the_work_dtype, TAU_INF32),
    (online_softmax_without_the_rescale, "not rescaled by exp(m_old - m_new)"),
    # found by the student round st19b
    (online_without_the_rescale_in_blocks_of_1024, "1024 keys? Rescale both"),
    (online_output_only_without_the_rescale_in_blocks_of_1024,
     "1024 keys? Rescale both"),
    (online_without_the_rescale_in_blocks_of_8192, "not rescaled by exp(m_old - m_new)"),
    (online_without_the_rescale_in_blocks_of_16384,
     "not rescaled by exp(m_old - m_new)"),
    # found by the student round st15b
    (lead_18_6, LONG_AT.format(what="weights", g=20)),
    (lead_22, LONG_AT.format(what="weights", g=25)),
    (lead_26, LONG_AT.format(what="output", g=30)),
    (lead_29_9, LONG_ROW),
    (zeroed_16, SNAPPED),
    (zeroed_18, SNAPPED),
    (zeroed_25, LONG_AT.format(what="weights", g=25)),
    (zeroed_29, LONG_ROW),
    (weight_1e_9, LONG_AT.format(what="output", g=30)),
    (long_double_for_float64, "for float64 inputs (O of dtype"),
    # found by the student round st13b
    (textbook_line_in_float16, RAW16_INF),
    (raw_products_in_float16_then_float32, RAW16_INF),
    (q_and_k_scaled_by_d_k_to_the_minus_quarter_in_float16, RAW16_ROUND),
    (clip_1e4, CLIPPED_NEAR_MINUS_1E5),
    (floor_on_the_shift_nan_made_uniform, "weights with every score near -1e5 differs "
     "from the reference by up to 0.436: your weights are all equal, where the softmax "
     "tells the keys apart: every scaled score here lies near -1e5, 1 to 5 apart (on "
     "the same row near +1e5 your weights are not all equal). Were the scores clipped "
     "from below (np.maximum(S, -L) with L below 1e5, which makes them all -L), or "
     "were NaN weights replaced by 1/T_k"),
    (scores_floored_at_minus_1e4, "Were the scores clipped from below (np.maximum(S, "
     "-L) with L below 1e5"),
    # found by the student round st11b
    (shift_where_exp_would_overflow_or_underflow, "weights with scaled scores near -740 "
     "differs from the reference by up to 0.00405: the shift is needed on every row, not "
     "only where exp() would overflow or underflow on every key"),
    (shift_if_any_score_passes_709, EXP_LIMIT),
    (shift_rows_whose_maximum_passes_700, EXP_LIMIT),
    (shift_all_if_some_score_passes_700, EXP_LIMIT),
    (one_maximum_per_head_in_float32, "A for float32 inputs contains NaN where the "
     "reference has none: usually exp() of a score that overflowed (inf / inf), or a row "
     "whose every score is -inf (-inf - (-inf)): " + OWN_MAXIMUM),
    (weights_rounded_to_8_decimals, "nearly, not exactly, the softmax"),
    (softmax_in_float32_for_float64_inputs, "nearly, not exactly, the softmax"),
    (softmax_in_float32_for_float64_inputs, "your array holds float32 numbers only"),
    (shift_by_S_max_axis_1, "weights at other sizes differs from the reference by up to "
     "0.5: the scores were shifted by each column's maximum, S.max(axis=-2)"),
    (factor_in_float16_rest_in_float32, FLOAT16_FACTOR),
    (tau_in_the_inputs_dtype, FLOAT16_FACTOR),
    (raw_scores_shifted_in_float16, FLOAT16_FACTOR + " (about 6e-08), where they round "
     "to 0: a factor, a tau or a divisor made a float16 (Q.dtype.type(...), "
     "np.float16(tau), or a float16 array divided by a Python float, which NumPy does "
     "in float16)"),
    (lead_14, ONE_HOT_AT.format(g=14.5, err="1.01e-06")),
    (lead_15, ONE_HOT_AT.format(g=16, err="2.25e-07")),
    (lead_17, ONE_HOT_AT.format(g=18.5, err="1.85e-08")),
    (lead_18, ONE_HOT_AT.format(g=18.5, err="1.85e-08")),
    (weight_1e_6, ONE_HOT_AT.format(g=16, err="2.25e-07")),
    (weight_1e_7, ONE_HOT_AT.format(g=18.5, err="1.85e-08")),
    (tau_clamped_from_above_at_1e12, "weights at tau = 1e+100 on Q scaled by tau differs "
     "from the reference by up to 0.66: your weights are those of a colder temperature "
     "than tau = 1e+100 (the softmax at tau = 1e+10 gives them here, as does any tau far "
     "below 1e+100): was tau clamped from above (min(tau, ...)"),
    (tau_clamped_from_above_at_1e12, "output at tau = 1e+100 on Q scaled by tau differs "
     "from the reference by up to 1.27: your weights are those of a colder temperature"),
    (spread_1e_6, UNIFORM_ROWS.format(tau="1e+06")),
    (spread_1e_7, UNIFORM_ROWS.format(tau="1e+07")),
    (tau_squared_under_the_root, "weights at tau = 1e+300 on Q scaled by tau differs from "
     "the reference by up to 0.346: right at tau = 1e+150 (on Q scaled by tau), but "
     "uniform at 1e+300, as when tau * tau overflows float64 at tau = 1e+300"),
    (tau_squared_under_the_root, "weights at tau = 1e-300 on Q scaled by tau contains NaN "
     "where the reference has none: right at tau = 1e-150 (on Q scaled by tau), but NaN "
     "at 1e-300, as when tau * tau underflows float64 at tau = 1e-300"),
    (uniform_above_1e250, "but uniform at 1e+300, as when tau * tau overflows float64 at "
     "tau = 1e+300"),
    (uniform_above_1e250, "(code that forms no square of tau has a special case above some "
     "tau instead, uniform weights that no tau > 0 calls for: the weights follow the scores "
     "at every tau)"),
    (causal_mask_if_square, "with T_q = T_k (Q = K = V): the weights are those of a "
     "causal mask: a causal mask when T_q = T_k"),
    (k_layout_auto_detected, "with T_k = d_k: the weights are softmax(Q K / (tau "
     "sqrt(d_k))), with K not transposed: was K transposed because its shape allowed it"),
    (shift_by_the_row_mean, OWN_MAXIMUM),
    (shift_by_the_row_minimum, OWN_MAXIMUM),
    (shift_by_the_unscaled_maximum, OWN_MAXIMUM),
    (shift_below_1, "the shift is needed at every temperature: here tau = 2 and the "
     "scaled scores reach 800"),
    (shift_below_0_02, "the shift is needed at every temperature: here tau = 2 and the "
     "scaled scores reach 800"),
    (no_shift_when_hot, "the shift is needed at every temperature: here tau = 1e+06 and "
     "the scaled scores reach 800"),
    (factor_in_the_inputs_dtype, "A for float16 inputs at tau = 1e-05 contains NaN where "
     "the reference has none"),
    (factor_in_the_inputs_dtype, "past float16's largest number, 65504: computed in "
     "float16, c Q K^T (or Q K^T / (tau sqrt(d_k))) is inf before the shift"),
    (float16_throughout, "past float16's largest number, 65504"),
    (temperature_as_a_power_of_the_weights, "weights at tau = 0.001: your weights are a "
     "power of the weights at tau = 1, softmax(Q K^T / sqrt(d_k)) ** (1 / tau)"),
    (floor_at_25, "was there a floor on the shifted scores (np.clip(S, -25, 0)"),
    (floor_at_30, "output at tau = 0.01 on 4096 keys differs from the reference by up to "
     "6.01e-07: the smallest weights of a row are all one number, e^-30 times the largest"),
    (uniform_above_1e10, "your weights are exactly 1/T_k, uniform, where at tau = 1e+100"),
    (first_order_expansion_above_1e10, "weights at tau = 1e+100 on Q scaled by tau differs "
     "from the reference by up to 0.095: your weights are the softmax's expansion to first "
     "order"),
    (tau_clamped_at_1e_19, "at tau = 1e-100 the softmax still tells the keys apart (the "
     "scores, divided by tau sqrt(d_k), lie near 1 here): was tau clamped from below"),
    (argmax_below_1e_18, "exactly one-hot (an argmax?), where at tau = 1e-100"),
    (the_librarys_function_in_a_thread, "calls the library's own "
     "attention.scaled_dot_product_attention"),
    (the_librarys_private_blocked_forward, "calls the library's own "
     "attention.blocked._blocked_forward"),
    (the_librarys_private_attend, "calls the library's own attention.forward._attend"),
    (the_librarys_online_softmax, "calls the library's own "
     "attention.backward._output_and_log_sum_exp"),
    (the_librarys_torch_function_imported_inside, "calls the library's own "
     "attention.torch.scaled_dot_product_attention"),
    (right_by_torch_sdpa, "calls torch.nn.functional.scaled_dot_product_attention, "
     "PyTorch's built-in attention: the exercise is to write attention with a "
     "temperature yourself, in NumPy"),
    (clip_1e4, "were the scores clipped"),
    (clip_1e8, "were the scores clipped"),
    (clip_1e10, "weights at tau = 1e-12 with scores of about 1e16 differs from the "
     "reference by up to 0.5: several keys share a row's largest weight where the "
     "softmax gives one key the most: were the scores clipped"),
    (clip_1e13, "were the scores clipped"),
    (clip_1e15, "were the scores clipped"),
    (clip_1e17, "weights at tau = 1e-300 with scores of about 1e304 differs from the "
     "reference by up to 0.5: several keys share a row's largest weight where the "
     "softmax gives one key the most: were the scores clipped"),
    (clip_1e30, "were the scores clipped"),
    (clip_1e200, "were the scores clipped"),
    (d_k_from_axis_1, "the scores are divided by tau sqrt(5), but 5 is not the width "
     "d_k = 4"),
    (einsum_with_fixed_letters, "on inputs of shape (8, 5, 6, T, d)"),
    (float16_work_for_float32_inputs, "your array holds float16 numbers only (computed "
     "in float16, then cast back to float32?)"),
    (right_by_the_library, "your function calls the library's own "
     "attention.scaled_dot_product_attention, which takes a temperature already"),
    (the_librarys_function_imported_inside, "calls the library's own "
     "attention.scaled_dot_product_attention"),
    (the_librarys_tiled_attention, "calls the library's own attention.tiled_attention"),
    (one_maximum_for_all_the_heads, "with batch dimensions at tau = 0.001 contains NaN "
     "where the reference has none: usually exp() of a score that overflowed (inf / inf), or "
     "a row whose every score is -inf (-inf - (-inf)): " + OWN_MAXIMUM),
    (shift_clamped_at_zero, "the shift must be each row's own maximum, also when every "
     "score is negative"),
    (shift_only_when_the_scores_could_overflow, "the shift must be each row's own maximum, "
     "also when every score is negative"),
    (log_sum_exp_added_to_the_maximum, "some rows sum to 0.99997, not 1, though each row is "
     "the softmax times one number: a log-sum-exp added to a large row maximum"),
    (at_least_float32, "float16 scores gave float32 weights: O and A are float32 for "
     "float16 inputs"),
    (floor_on_the_shifted_scores, "was there a floor on the shifted scores (np.clip(S, -20, 0)"),
    (tau_rounded_to_float32, "tau was rounded to float32 (0.3 is 0.3000000119"),
    (factor_in_float32, "the factor 1/(tau sqrt(d_k)) was rounded to float32"),
    (inverse_sqrt_d_k_in_float32, "float32's precision apart: 1/sqrt(d_k) was rounded "
     "to float32 (np.float32(1 / np.sqrt(d_k)), or a float32 constant), tau in float64; "
     "keep every number in float64"),
    (O_returned_as_a_list, "O is a list, not an array: return NumPy arrays of the "
     "inputs' dtype (float64 here)"),
    (tau_clamped_at_the_dtypes_tiny, "A for float16 inputs at a near tie at tau = 1.5e-08 "
     "differs from the reference by up to 0.379: your weights are the softmax at tau = "
     "6.1e-05, np.finfo(float16).tiny, warmer than tau = 1.5e-08"),
    (tau_clamped_at_float32s_tiny, "A for float32 inputs of size 1e-20 at tau = 1e-40 "
     "differs from the reference by up to 0.397: your weights are the softmax at tau = "
     "1.18e-38, np.finfo(float32).tiny, warmer than tau = 1e-40"),
    (tau_clamped_at_float64s_tiny, "weights at tau = 1e-310 on Q scaled by tau differs "
     "from the reference by up to 0.344: your weights are the softmax at tau = 2.23e-308, "
     "np.finfo(float64).tiny, warmer than tau = 1e-310"),
    (tau_clamped_from_above_at_1e300, "weights at tau = 1e+306 on Q scaled by tau differs "
     "from the reference by up to 0.66: your weights are those of a colder temperature "
     "than tau = 1e+306"),
    (factor_computed_first, "weights at tau = 1e-310 on Q scaled by tau contains NaN "
     "where the reference has none: at tau = 1e-310 the factor 1/(tau sqrt(d_k)) is inf "
     "in float64 (about 3.8e309"),
    (tau_as_a_torch_tensor, "were rounded to float32 (torch.tensor(tau)"),
    (float32_work_cast_back, "your array holds float32 numbers only (computed in float32"),
    (float16_work, "your array is float16 while the inputs are float64, so it keeps only "
     "about 3 digits"),
    (shift_by_the_column_maximum, "shifted by each column's maximum, S.max(axis=-2)"),
    (temperature_as_a_power, "np.exp(S) ** (1 / tau)"),
    (uniform_above_1e8, "exactly 1/T_k, uniform, where at tau = 1e+08"),
    (output_the_mean_of_the_values_when_hot, "your output is the plain mean of the values"),
    (epsilon_in_the_row_sums, "an epsilon added to the row sums"),
    (epsilon_1e_8_in_the_row_sums, "an epsilon added to the row sums"),
    (tau_clamped_at_1e_16, "the softmax at tau = 1e-16: was tau clamped from below"),
    (tau_clamped_at_the_machine_epsilon, "at tau = 2.22e-16: was tau clamped from below"),
    (tau_plus_1e_18, "or an epsilon added to it?"),
    (argmax_below_1e_16_ties_shared, "at tau = 1e-18 the softmax still gives several keys"),
    (uniform_above_1e6, "exactly 1/T_k, uniform, where at tau = 1e+07"),
    (second_order_exp_when_hot, "the scale is right, so exp() or the normalisation was"),
    (root_with_a_wrong_exponent, "with c = 1.2601, but at tau = 0.3 and d_k = 7 the"),
    (np_float64_tau_promotes_float32, "with tau = np.float64(1.5), a NumPy float64 scalar"),
    # (st22b: the first warm tau past its threshold 1e4 is now 3e4)
    (d_k_instead_of_sqrt_when_hot, "at tau = 30000 differs from the reference by up to "
     "6.42e-06: the scores are divided by tau d_k instead of tau sqrt(d_k)"),
    (sqrt_d_v_when_hot, "tau sqrt(2), but 2 is not the width d_k = 7"),
    (d_k_from_the_second_axis_of_K, "read d_k from the last axis, Q.shape[-1]"),
    (argmax_with_isclose_ties_when_cold, "equal shares of a row's best keys"),
    (tau_plus_a_tiny_epsilon, "differ by tau sqrt(d_k)"),
    (argmax_below_1e_10, "differ by tau sqrt(d_k)"),
    (first_order_expansion_when_hot, "weights at tau = 100"),
    (np_sqrt_turns_float32_into_float64, "np.sqrt(d_k) is a NumPy float64 scalar"),
    (clips_the_scores, "were the scores clipped"),
    (uniform_when_hot, "exactly 1/T_k, uniform"),
    (right_only_at_the_checkers_d_k, "softmax(c Q K^T) with c ="),
    (right_only_at_the_checkers_temperatures, "tau is ignored"),
    (casts_to_float64, "O of dtype float64 and A of dtype float64"),
    (scales_Q_in_place, "changed its argument Q in place"),
    (argmax_below_a_tiny_tau, "an argmax picks only one"),
    (sqrt_of_d_k_plus_one, "softmax(c Q K^T) with c ="),
    (output_zeros, "all zeros"),
    (output_none, "is None"),
    (tau_multiplies, "multiplies"),
    (tau_after_the_softmax, "after the softmax"),
    (softmax_over_the_query_axis, "query axis"),
    (sqrt_d_k_dropped, "not by sqrt(d_k)"),
    (d_k_instead_of_sqrt, "tau d_k instead"),
    (tau_inside_the_root, "outside the square root"),
    (tau_ignored, "ignored"),
    (weights_transposed, "transposed"),
    (no_max_subtraction, "overflow"),
    (transpose_with_dot_T, "np.swapaxes(K, -1, -2)"),
    (argmax_when_cold, "exactly one-hot (an argmax?)"),
    (returns_weights_first, "wrong order"),
    (output_divided_by_tau, "divided by tau"),
    (output_from_unnormalised_exponentials, "not A V of your own weights"),
    (returns_only_the_output, "pair (O, A)"),
    (tau_squared, "divided by tau twice"),
    (tau_on_both_q_and_k, "both Q and K"),
    (scores_times_sqrt_d_k, "multiplied by sqrt(d_k)"),
    (d_k_from_the_first_axis, "Q.shape[-1]"),
    (d_k_from_len_of_K, "not the width d_k"),
    (temperature_on_the_values, "A V divided by tau"),
    (values_in_another_order, "not A V of your own weights"),
    (np_dot_instead_of_matmul, "np.dot"),
    (einsum_without_ellipsis, "einsum without '...'"),
    (softmax_along_axis_1, "along axis 1"),
    (one_maximum_for_the_whole_array, "its own maximum"),
    (maximum_without_keepdims, "keepdims=True"),
    (weights_not_normalised, "row sums"),
    (log_weights_returned, "log-softmax"),
    (computed_in_float32, "float32"),
    (shift_floored_at_700, "score lies near -1e5, and a floor on the shift"),
    (shift_floored_at_300, "score lies near -1e5, and a floor on the shift"),
    (shift_floored_at_80_in_float32, "score lies near -200 (in float32, exp() is 0 "
     "below about -103), and a floor on the shift"),
    (shift_floored_at_100_in_float32, "a floor on the shift"),
]


def _check_on_the_fixed_settings(attempt):
    """The checker on its fixed temperatures alone (the ones drawn afresh on each call
    only add coverage): what each wrong attempt must fail."""
    from attention.checkers import temperature

    drawn, temperature._draw_taus = temperature._draw_taus, lambda seed: ()
    try:
        return checkers.check_attention_with_temperature(attempt)
    finally:
        temperature._draw_taus = drawn


@pytest.mark.parametrize("attempt, keyword", WRONG, ids=[f.__name__ for f, _ in WRONG])
def test_each_plausible_wrong_attempt_is_rejected_with_a_message_naming_the_mistake(attempt, keyword):
    run = run_once(_check_on_the_fixed_settings, attempt)  # see conftest
    assert run.result is False
    report = run.text
    failed = [line for line in report.splitlines() if line.startswith("✗")]
    assert failed, report
    assert any(keyword in line for line in failed), report


# Phrases that belong to some mistakes only: no other attempt may be told them.
EXCLUSIVE = {
    "divided by tau twice": {tau_squared, tau_on_both_q_and_k},
    # (an argmax with np.isclose ties is one-hot where the scores lie apart)
    "exactly one-hot": {argmax_for_1e_299_to_1e_19, argmax_when_cold,
                        argmax_below_a_tiny_tau, argmax_below_1e_10,
                        argmax_below_1e_16_ties_shared, argmax_below_1e_18,
                        argmax_with_isclose_ties_when_cold, lead_14, lead_15, lead_17,
                        lead_18, weight_1e_6, weight_1e_7, lead_18_6, lead_22, lead_26,
                        lead_29_9, zeroed_16, zeroed_18, zeroed_25, zeroed_29,
                        weight_1e_9},
    # the snap's and the zeroing's name for them only
    # (an argmax on a row whose next key lies 10 to 40 below is a snap at a lead of 0)
    LONG_ROW: {argmax_when_cold, lead_14, lead_15, lead_17, lead_18, weight_1e_6, weight_1e_7, lead_18_6,
               lead_22, lead_26, lead_29_9, zeroed_16, zeroed_18, zeroed_25, zeroed_29,
               weight_1e_9},
    "were the scores clipped": {clips_the_scores, clip_1e4, clip_1e8, clip_1e10, clip_1e13,
                                clip_1e15, clip_1e17, clip_1e30, clip_1e200},
    # st23b: float16's blame only where float64 copies give no NaN
    NAN_IN_FLOAT64_TOO: {shift_only_when_cold, shift_by_the_row_mean_in_float64,
                         raw_maximum_subtracted_from_the_scaled_scores,
                         shift_by_the_row_mean, shift_by_the_row_minimum,
                         shift_by_the_unscaled_maximum, one_maximum_for_the_whole_array,
                         no_max_subtraction, shift_clamped_at_zero},
    "tau rounded to": {tau_rounded_to_2_digits, tau_rounded_to_4_digits,
                       tau_rounded_to_6_digits},
    # (st23b: every snap to one-hot, the rows' zeroing and the argmax make them so)
    "one-hot, 1 on the best key and 0": {snapped_past_1_minus_1e_10, weight_1e_6,
                                       weight_1e_7, weight_1e_9, argmax_when_cold,
                                       zeroed_16, zeroed_18, zeroed_25},
    "were the raw products Q K^T computed in": {float32_work_for_float16_inputs,
                                       float32_products_of_rescaled_inputs},
    # (st23b: right weights are a floor's at -199 too; an output squeezed was told it)
    # (no shift, or max(row maximum, 0), at tau = 1.5 is a shift floored too)
    "(in float32, exp() is 0 below about -103)": {shift_floored_at_80_in_float32,
                                                  shift_floored_at_100_in_float32,
                                                  shift_clamped_at_zero, shift_below_1,
                                                  shift_below_0_02},
    "compute float16 in float64": {textbook_line_in_float16,
                                   raw_products_in_float16_then_float32,
                                   q_and_k_scaled_by_d_k_to_the_minus_quarter_in_float16},
    "exactly 1/T_k": {uniform_for_1e11_to_1e299, uniform_when_hot, uniform_above_1e6,
                      uniform_above_1e8, uniform_above_1e10, spread_1e_6, spread_1e_7},
    "made uniform when its scaled scores lie close together": {spread_1e_6, spread_1e_7},
    "was tau clamped from above": {tau_clamped_from_above_at_1e12,
                                   tau_clamped_from_above_at_1e300},
    "tau * tau": {tau_squared_under_the_root, divided_by_the_root_of_tau_times_tau, uniform_above_1e250,
                  divided_by_math_sqrt_of_tau_squared},
    # st20b: told only to attempts whose float32 factor is inf at 1e-40 (and to one that
    # returns NaN there, whose NaN it explains as the likeliest cause)
    "the factor 1/(tau sqrt(d_k)) is inf at tau": {
        shifted_then_scaled_by_a_float32_factor, nan_for_float32_below_1e_30,
        float16_scaled_in_float32_before_the_shift},
    "a factor, a tau or a divisor made a float16": {
        factor_in_float16_rest_in_float32, tau_in_the_inputs_dtype,
        raw_scores_shifted_in_float16},
    # the clamp's hint only for weights that are the softmax at a warmer tau
    "was tau clamped from below": {tau_clamped_at_1e_16, tau_clamped_at_the_machine_epsilon,
                                   tau_plus_1e_18, tau_plus_a_tiny_epsilon,
                                   temperature_as_a_power, tau_clamped_at_1e_19,
                                   tau_clamped_at_a_far_cold_value, tau_plus_1e_9,
                                   tau_plus_1e_12, tau_clamped_at_the_dtypes_tiny,
                                   tau_clamped_at_float32s_tiny,
                                   tau_clamped_at_float64s_tiny},
    "the scale is right": {second_order_exp_when_hot, weights_rounded_to_8_decimals,
                           softmax_in_float32_for_float64_inputs,
                           first_order_below_a_spread_of_1e_3,
                           first_order_below_a_spread_of_5e_4},
    "expansion to first order": {first_order_expansion_when_hot,
                                 first_order_expansion_above_1e10,
                                 first_order_below_a_spread_of_1e_3},
    "a floor on the shifted scores": {floor_on_the_shifted_scores, floor_at_25, floor_at_30},
    "the shift is needed at every temperature": {shift_below_1, shift_below_0_02,
                                                 no_shift_when_hot, shift_only_when_cold},
    "a power of the weights at tau = 1": {temperature_as_a_power_of_the_weights,
                                          power_of_the_weights_in_float64},
    # (the factor's rounding for float64 inputs; every attempt that divides float32
    # scores by a Python float is told at tau = 1e39 that tau rounded to float32 is inf)
    "float32's precision apart": {tau_rounded_to_float32, factor_in_float32, tau_as_a_torch_tensor,
                                  inverse_sqrt_d_k_in_float32},
    # (at tau = 2, a power of 2, the factor rounded is 1/sqrt(d_k) rounded over tau)
    "1/sqrt(d_k) was rounded to float32": {inverse_sqrt_d_k_in_float32, factor_in_float32},
    "is a list, not an array": {O_returned_as_a_list},
    "at a bound of the inputs' dtype": {tau_clamped_at_the_dtypes_tiny,
                                        tau_clamped_at_float32s_tiny,
                                        tau_clamped_at_float64s_tiny},
    # (and every attempt that computes the factor first, right at 1e-300: the factor is
    # inf at 1e-310 in theirs too)
    "the factor 1/(tau sqrt(d_k)) is inf in float64": {
        factor_computed_first, scaled_in_float32_before_the_shift,
        shifted_then_scaled_by_a_float32_factor, shift_only_where_the_maximum_passes_709,
        shift_only_where_exp_of_the_maximum_overflows, scores_floored_at_minus_1e9,
        shift_floored_at_minus_1e6, factor_in_float16_rest_in_float32,
        factor_in_the_inputs_dtype, d_k_instead_of_sqrt_when_hot},
    "shifted by each column's maximum": {shift_by_the_column_maximum,
                                         shift_by_S_max_axis_1},
    "float64's exp limit (709.78)": {shift_where_exp_would_overflow_or_underflow,
                                     shift_if_any_score_passes_709,
                                     shift_rows_whose_maximum_passes_700,
                                     shift_all_if_some_score_passes_700},
    "not only where exp() would overflow or underflow": {
        shift_where_exp_would_overflow_or_underflow},
    # (uniform weights give that output too)
    "plain mean of the values": {output_the_mean_of_the_values_when_hot, uniform_when_hot,
                                 uniform_above_1e6, uniform_above_1e8, uniform_above_1e10,
                                 uniform_for_1e11_to_1e299},
    "an epsilon added to the row sums": {epsilon_in_the_row_sums,
                                         epsilon_1e_8_in_the_row_sums},
    "also when every score is negative": {shift_clamped_at_zero,
                                          shift_only_when_the_scores_could_overflow},
    "a log-sum-exp added to a large row maximum": {log_sum_exp_added_to_the_maximum},
    "float16 scores gave float32 weights": {at_least_float32, computed_in_float32},
    "the library's own": {right_by_the_library, the_librarys_function_imported_inside,
                          the_librarys_tiled_attention, the_librarys_function_in_a_thread,
                          the_librarys_private_blocked_forward, the_librarys_private_attend,
                          the_librarys_online_softmax,
                          the_librarys_torch_function_imported_inside},
    "PyTorch's built-in attention": {right_by_torch_sdpa, O_by_the_aten_operator,
                                     O_by_the_aten_default_overload,
                                     O_by_the_aten_math_kernel,
                                     weights_by_multi_head_attention_forward},
    # st22b: an epsilon added to tau, told apart from a factor rounded to float32
    "no rounding to float32 gives that factor": {tau_plus_1e_8, tau_plus_1e_9,
                                                 tau_plus_1e_12},
    "replacing the NaN weights by 0": {no_shift_then_nan_to_num,
                                       no_shift_nan_set_to_0_by_index},
    "rounded to float32, where 1e-100 is 0": {tau_rounded_to_float32, factor_in_float32,
                                              tau_as_a_torch_tensor},
    # (a shift only where some score passes 709.78 is one only past a bound too)
    "the sum of exp overflows": {shift_only_where_the_maximum_passes_709,
                                 shift_only_where_exp_of_the_maximum_overflows,
                                 shift_if_any_score_passes_709},
    # (np.clip(S, -L, L) floors the scores too)
    "the exponentials were not shifted": {no_shift_epsilon_1e_300_in_the_sum,
                                          no_shift_nan_made_uniform,
                                          no_shift_then_nan_to_num,
                                          no_shift_nan_set_to_0_by_index},
    "no floor is needed": {scores_floored_at_minus_1e9, shift_floored_at_minus_1e6,
                           clip_1e8, clip_1e10, clip_1e13, clip_1e15, clip_1e17,
                           clip_1e30, clip_1e200},
}


@pytest.mark.parametrize("attempt", [f for f, _ in WRONG], ids=[f.__name__ for f, _ in WRONG])
def test_no_wrong_attempt_is_told_another_mistakes_name(attempt):
    report = run_once(_check_on_the_fixed_settings, attempt).text
    for phrase, owners in EXCLUSIVE.items():
        if attempt not in owners:
            assert phrase not in report, (attempt.__name__, phrase)


def right_with_einsum(Q, K, V, tau):
    Q64, K64, V64 = (x.astype(np.float64) for x in (Q, K, V))
    R = np.einsum("...qd,...kd->...qk", Q64, K64)
    A = _softmax((R - R.max(axis=-1, keepdims=True)) / tau / Q.shape[-1] ** 0.5)
    return np.einsum("...qk,...kd->...qd", A, V64).astype(Q.dtype), A.astype(Q.dtype)


def right_with_tau_on_q_only(Q, K, V, tau):
    # (Q / tau) K^T = Q K^T / tau, in float64 (st20b: in float32, 1/tau is inf below
    # 3e-39, and (Q / tau) K^T of large entries at 0.1); right while Q / tau fits float64
    Q64, K64, V64 = (x.astype(np.float64) for x in (Q, K, V))
    A = _softmax(_scores(Q64 / float(tau), K64, 1.0))  # (1 / tau is inf at 1e-310)
    return (A @ V64).astype(Q.dtype), A.astype(Q.dtype)


def right_with_log_sum_exp(Q, K, V, tau):
    Qw, Kw, Vw = _exact(Q, K, V)
    S = _shifted(Qw, Kw, tau)
    m = S.max(axis=-1, keepdims=True)
    A = np.exp(S - m - np.log(np.exp(S - m).sum(axis=-1, keepdims=True)))
    return [(A @ Vw).astype(Q.dtype), A.astype(Q.dtype)]  # a list is a pair too


def scaled_dot_product_attention(Q, K, V, tau=1.0):
    """The reader's own function of the library's name (from the masks page's exercise)."""
    return right(Q, K, V, tau)


def right_by_the_readers_own_function_of_the_librarys_name(Q, K, V, tau):
    return scaled_dot_product_attention(Q, K, V, tau)


def right_shifted_by_the_raw_maximum_then_scaled(Q, K, V, tau):
    # st18b: shifting the raw scores by their own row maximum, then scaling, is exact
    # (tau sqrt(d_k) > 0 keeps the maximum where it was); the NaN hint no longer names
    # "the unscaled scores' maximum" alone among the wrong shifts
    Qw, Kw, Vw = _exact(Q, K, V)
    R = Qw @ np.swapaxes(Kw, -1, -2)
    S = (R - R.max(axis=-1, keepdims=True)).astype(np.float64) / (tau * Q.shape[-1] ** 0.5)
    E = np.exp(S)
    A = E / E.sum(axis=-1, keepdims=True)
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def right_divided_then_shifted_in_float64(Q, K, V, tau):
    # st25b: in float64 the shift need not come before the division where the scaled
    # scores fit float64, as the statement promises (the page says so)
    Qw, Kw, Vw = _exact(Q, K, V)
    A = _softmax(Qw @ np.swapaxes(Kw, -1, -2) / tau / np.sqrt(Q.shape[-1]))
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


def right_divided_by_tau_sqrt_d_k_then_shifted_in_float64(Q, K, V, tau):
    Qw, Kw, Vw = _exact(Q, K, V)
    A = _softmax(Qw @ np.swapaxes(Kw, -1, -2) / (tau * np.sqrt(Q.shape[-1])))
    return (A @ Vw).astype(Q.dtype), A.astype(Q.dtype)


RIGHT = [right, right_in_torch, right_with_einsum, right_with_tau_on_q_only,
         right_divided_then_shifted_in_float64,
         right_divided_by_tau_sqrt_d_k_then_shifted_in_float64,
         right_with_log_sum_exp, right_by_the_readers_own_function_of_the_librarys_name,
         right_shifted_by_the_raw_maximum_then_scaled,
         online_with_the_rescale_in_blocks_of_8192]


@pytest.mark.parametrize("attempt", RIGHT, ids=[f.__name__ for f in RIGHT])
def test_right_attempts_are_accepted(attempt, capsys):
    assert checkers.check_attention_with_temperature(attempt) is True
    report = capsys.readouterr().out
    assert "✗" not in report and "checks passed" in report


def test_the_output_is_checked_not_only_the_weights(capsys):
    # The first version compared only A: returning zeros for O passed every case.
    checkers.check_attention_with_temperature(output_zeros)
    failed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("✗")]
    assert any("output at tau" in line for line in failed)
    assert any(line.startswith("✗ output at tau = 100 to") for line in failed)  # hot
    assert any(line.startswith("✗ output at tau = 0.001") for line in failed)  # cold
    assert not any("weights at tau" in line for line in failed)  # its weights are right


def test_both_limits_and_a_batch_are_checked(capsys):
    checkers.check_attention_with_temperature(right)
    report = " ".join(capsys.readouterr().out.split())  # titles wrap
    for case in ("tau = 0.001", "1e-18", "1e+10", "equal scores", "batch",
                 "two further queries", "scaled scores lie near -740",
                 "tau = 1.5, 0.01, 1e-30, 1e-40 and 1e+39",
                 "0.1 and 0.001 on entries of size 1e19",
                 "0.7, 0.01, 1e-05",
                 "4096 keys", "large scores", "1e+300 and 1e+306 on Q scaled by tau",
                 "1e-300 and 1e-310 on Q scaled by tau", "1e-40 on entries of size 1e-20", "scores of about 1e16", "(8, 5, 6, T, d)",
                 "tau = 0.7", "1e-05, 1e-09 and 1e-40", "lead by 14.5, 16 and 18.5",
                 "rows of 4096 keys led by 20, 25 and 30"):
        assert case in report, case


# What the exercise asks (the output in both limits, the weights of a tie, the shift by
# each row's own maximum) is not answered by the titles of the cases a right attempt
# passes: they say what is run, not what comes out (st4b).
ANSWERS = ("best key", "one-hot", "share", "mean of the values", "uniform", "own maximum",
           "tau -> ", "shifted by")


def test_the_passing_cases_titles_do_not_answer_the_exercise(capsys):
    checkers.check_attention_with_temperature(right)
    report = capsys.readouterr().out
    assert "16 of 16 checks passed." in report
    for answer in ANSWERS:
        assert answer not in report, answer


def test_every_size_of_the_checkers_inputs_differs_from_every_other():
    # A width read from the wrong axis, or a transpose, passes unnoticed when two sizes agree.
    from attention.checkers import temperature as t

    sizes = (t.T_Q, t.T_K, t.D_K, t.D_V) + t.BATCH
    assert len(set(sizes)) == len(sizes)


def test_no_two_scale_mistakes_give_the_same_scores_at_the_checkers_temperatures():
    # Each mistake divides Q K^T by its own factor; if two agreed at some tau the checker
    # could name the wrong one there (st6b: at the other sizes' old tau = 0.8 = d_k / T_q,
    # d_k read from the axis of T_q gave tau sqrt(T_q) = sqrt(tau d_k), and was told
    # "tau belongs outside the square root").
    from attention.checkers import temperature as t

    rng = np.random.default_rng(0)
    lead, T_q, T_k, d_k, d_v = t.OTHER
    settings = [((), (t.T_Q, t.T_K, t.D_K, t.D_V), t.TAUS),
                (t.BATCH, (t.T_Q, t.T_K, t.D_K, t.D_V), t.TAUS + (2.0,)),
                (t.BATCH5, (t.T_Q, t.T_K, t.D_K, t.D_V), (2.0,)),
                (lead, (T_q, T_k, d_k, d_v), (t.OTHER_TAU,))]
    assert t.OTHER_TAU != d_k / T_q
    for lead, (T_q, T_k, d_k, d_v), taus in settings:
        Q, K, V = (rng.standard_normal(lead + s)
                   for s in ((T_q, d_k), (T_k, d_k), (T_k, d_v)))
        for tau in taus:
            right_A = _softmax(_scores(Q, K, tau))
            # (the power of the exponentials is no scale mistake: it equals the softmax
            # at these temperatures, and is told apart where tau is far from 1)
            weights = [right_A] + [w for m, w in t._weight_mistakes(Q, K, V, tau)
                                   if "as a power" not in m]
            for i in range(len(weights)):
                for j in range(i):
                    assert not np.allclose(weights[i], weights[j], atol=1e-4), (lead, tau, i, j)


def test_the_page_solution_is_accepted():
    from tests.pages._common import solution_namespace

    ns = solution_namespace("soft-retrieval", "attention_with_temperature")
    assert checkers.check_attention_with_temperature(ns["attention_with_temperature"],
                                                     verbose=False)


def tau_clamped_from_below(floor):
    def attempt(Q, K, V, tau):
        return right(Q, K, V, max(tau, floor))  # "so as not to divide by a tiny number"
    attempt.__name__ = f"tau_clamped_at_{floor:g}"
    return attempt


@pytest.mark.parametrize("floor", [1e-3, 1e-4, 1e-6, 1e-10, 1e-13, 1e-16, 2.2e-16])
def test_a_temperature_clamped_from_below_is_rejected_and_told_so(floor, capsys):
    # Found while making the checkers one engine: max(tau, 1e-3) passed every case, the
    # weights at 1e-3 and at 1e-12 being one-hot on the checker's inputs alike.
    assert checkers.check_attention_with_temperature(tau_clamped_from_below(floor)) is False
    report = capsys.readouterr().out
    failed = ["✗" + case.replace("\n    ", " ") for case in report.split("✗")[1:]]
    assert failed and all("was tau clamped from below" in line for line in failed), failed


def test_the_near_tie_gives_its_two_keys_e_over_1_plus_e_and_its_complement():
    # The case the clamp fails: two keys a scaled score of exactly 1 apart at tau = 1e-9.
    from attention.checkers import temperature as t

    rng = np.random.default_rng(t._RNG_SEED + 1)  # the checker's own inputs
    Q, K, V = (rng.standard_normal(s) for s in ((t.T_Q, t.D_K), (t.T_K, t.D_K), (t.T_K, t.D_V)))
    q = Q[0]
    j = int(np.argmax(K @ q))
    K_near = K.copy()
    K_near[(j + 1) % t.T_K] = K[j] - (t.NEAR * np.sqrt(t.D_K) / (q @ q)) * q
    A = right(Q[:1], K_near, V, t.NEAR)[1][0]
    assert A[j] == pytest.approx(np.e / (1 + np.e), abs=1e-6)
    assert A[(j + 1) % t.T_K] == pytest.approx(1 / (1 + np.e), abs=1e-6)


def test_at_the_hotter_temperature_the_exact_weights_are_not_uniform_to_the_tolerance():
    # Exactly uniform weights for tau > 1e6 passed while 1e6 was the hottest case; at
    # 1e7 the softmax still differs from 1/T_k by more than the 1e-8 compared, at 1e8 not
    # (there the shortcut is right to the checked precision).
    from attention.checkers import temperature as t

    rng = np.random.default_rng(t._RNG_SEED + 1)  # the checker's own inputs
    Q, K, V = (rng.standard_normal(s) for s in ((t.T_Q, t.D_K), (t.T_K, t.D_K), (t.T_K, t.D_V)))
    assert t.HOTTER == 1e7
    off = np.abs(right(Q, K, V, t.HOTTER)[1] - 1 / t.T_K).max()
    assert 2e-8 < off < 5e-8
    assert np.abs(right(Q, K, V, 1e8)[1] - 1 / t.T_K).max() < 1e-8


def test_the_coldest_near_tie_gives_its_two_keys_e_over_1_plus_e():
    # A clamp at 1e-16 (or at the machine epsilon) passed while 1e-15 was the coldest
    # near tie: at 1e-18 the softmax still gives the two keys e/(1 + e) and 1/(1 + e).
    from attention.checkers import temperature as t

    rng = np.random.default_rng(t._RNG_SEED + 1)
    Q, K, V = (rng.standard_normal(s) for s in ((t.T_Q, t.D_K), (t.T_K, t.D_K), (t.T_K, t.D_V)))
    q = 1e-9 * Q[0]  # scores about 1e-9: their rounding is about 1e-7 of the gap
    j = int(np.argmax(K @ q))
    K_near = K.copy()
    K_near[(j + 1) % t.T_K] = K[j] - (t.COLDER * np.sqrt(t.D_K) / (q @ q)) * q
    A = right(q[None], K_near, V, t.COLDER)[1][0]
    assert A[j] == pytest.approx(np.e / (1 + np.e), abs=1e-6)
    A_clamped = right(q[None], K_near, V, 1e-16)[1][0]
    assert abs(A_clamped[j] - 0.5) < 0.01


@pytest.mark.parametrize("attempt", [right, right_with_einsum, right_with_tau_on_q_only,
                                     right_in_torch, right_by_the_library])
def test_a_right_attempt_keeps_float32_for_a_numpy_float64_tau(attempt):
    Q, K, V = (np.ones(s, np.float32) for s in ((2, 3), (4, 3), (4, 5)))
    O, A = attempt(Q, K, V, np.float64(1.5))
    assert O.dtype == A.dtype == np.float32


def test_the_shift_by_the_column_maximum_is_not_blamed_on_the_scale(capsys):
    # st4b: at the tie case (one query, T_q = 1) the column maximum is the row itself,
    # every weight 1/T_k, and a scale fitted to them (c = 0) was blamed.
    checkers.check_attention_with_temperature(shift_by_the_column_maximum)
    report = capsys.readouterr().out
    assert "softmax(c Q K^T) with c = 0," not in report
    assert "shifted by each column's maximum" in report


def test_float16_work_on_float32_inputs_is_told_its_precision(capsys):
    checkers.check_attention_with_temperature(float16_work)
    failed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("✗")]
    f32 = [line for line in failed if "float32 inputs give float32" in line]
    assert f32 and "your array is float16, which keeps only about 3 digits" in f32[0]
    assert not any("not A V" in line or "rows sum to" in line for line in failed)


def test_the_negative_row_underflows_without_its_own_shift_and_not_with_it():
    # st5b: a shift by max(row maximum, 0), or one made only above 700, passed every
    # case: no row had every score far below 0.
    from attention.checkers import temperature as t

    rng = np.random.default_rng(t._RNG_SEED + 1)  # the checker's own inputs
    Q, K, V = (rng.standard_normal(s) for s in ((t.T_Q, t.D_K), (t.T_K, t.D_K), (t.T_K, t.D_V)))
    q = t._scaled_scores_row(K, t.NEGATIVE, t.COLD)
    S = _scores(q, K, t.COLD)
    assert np.allclose(S, [t.NEGATIVE], rtol=0, atol=1e-9) and S.max() < -800
    assert not np.exp(S).any()  # every exponential underflows: 0/0 without the shift
    A = right(q, K, V, t.COLD)[1]
    assert np.isfinite(A).all() and A[0].max() == pytest.approx(1 / (1 + np.exp(-1.0)
                                                                     + np.exp(-2.5)
                                                                     + np.exp(-5.0)))


@pytest.mark.parametrize("attempt", [right, right_in_torch, right_with_einsum,
                                     right_with_tau_on_q_only, right_with_log_sum_exp,
                                     right_by_torch_sdpa])
def test_a_right_attempt_keeps_float16(attempt):
    Q, K, V = (np.ones(s, np.float16) for s in ((2, 3), (4, 3), (4, 5)))
    O, A = attempt(Q, K, V, 0.7)
    assert O.dtype == A.dtype == np.float16


def test_float64_work_cast_back_to_float16_passes():
    # computing in float64 is right as long as the results keep the inputs' dtype (in
    # float32 not at a cold near tie: float32_work_for_float16_inputs, st23b)
    def via_float64(Q, K, V, tau):
        O, A = right(*(x.astype(np.float64) for x in (Q, K, V)), tau)
        return O.astype(Q.dtype), A.astype(Q.dtype)

    assert checkers.check_attention_with_temperature(via_float64, verbose=False)


def test_a_wrong_row_sum_is_printed_with_the_digits_that_tell_it_from_1(capsys):
    # st5b: the sums of a log-sum-exp added to the maximum printed as "[1.]", "not 1"
    checkers.check_attention_with_temperature(log_sum_exp_added_to_the_maximum)
    report = capsys.readouterr().out
    assert "[1.]" not in report and "sum to 1.," not in report
    assert "some rows sum to 0.99997, not 1" in report


def test_the_librarys_attention_fails_every_case_with_one_line(capsys):
    # st5b: the library's own function passed every case of the exercise it answers
    assert checkers.check_attention_with_temperature(right_by_the_library) is False
    report = capsys.readouterr().out
    assert report.startswith("✗ every case: your function calls the library's own "
                             "attention.scaled_dot_product_attention")
    assert "0 of 16 checks passed." in report
    # and the watch leaves no profiler behind
    import sys

    assert sys.getprofile() is None


def test_the_clipping_probe_gives_the_best_key_everything_and_a_clip_two_halves():
    # st6b: np.clip(S, -L, L) with L from 1e9 to 1e15 passed; on this probe the softmax
    # gives [1, 0, 0] and a clip at any L below the second scaled score [1/2, 1/2, 0].
    from attention.checkers import temperature as t

    Q, K = np.array(t.CLIP_Q), np.array(t.CLIP_K)
    V = np.eye(3)[:, :2]
    S = _scores(Q, K, t.COLDEST)
    assert S[0, 0] == pytest.approx(7.07e15, rel=1e-3)
    assert S[0, 1] == pytest.approx(3.536e15, rel=1e-3)
    assert right(Q, K, V, t.COLDEST)[1][0].tolist() == [1.0, 0.0, 0.0]
    for L in (1e4, 1e9, 1e15, 3.5e15):
        assert _softmax(np.clip(S, -L, L))[0].tolist() == [0.5, 0.5, 0.0], L


def test_the_extreme_temperatures_keep_the_scores_finite_and_the_scaled_scores_near_1():
    # st6b: shortcuts just past the checker's hottest and coldest tau passed; on a query
    # scaled by tau, at 1e300 and 1e-300, the scaled scores do not depend on tau.
    from attention.checkers import temperature as t

    rng = np.random.default_rng(t._RNG_SEED + 1)  # the checker's own inputs
    Q, K, V = (rng.standard_normal(s) for s in ((t.T_Q, t.D_K), (t.T_K, t.D_K), (t.T_K, t.D_V)))
    for tau in (t.EXTREME_HOT, t.EXTREME_COLD):
        R = (tau * Q) @ K.T
        assert np.isfinite(R).all() and np.abs(R).min() > 0
        S = _scores(tau * Q, K, tau)
        assert np.allclose(S, _scores(Q, K, 1.0), rtol=1e-12)
        assert 0.1 < np.abs(S).max() < 10
        A = right(tau * Q, K, V, tau)[1]
        assert np.abs(A - 1 / t.T_K).max() > 0.1  # far from uniform and from one-hot
        assert A.max() < 0.99


def test_the_float16_inputs_cold_scaled_scores_overflow_float16_and_fit_float32():
    # st7b: the page's solution (the factor in Q's dtype) gave NaN on float16 inputs at
    # tau <= 1e-5, where only tau = 0.7 was run on them
    from attention.checkers import temperature as t
    from attention.checkers._engine import _RNG_SEED, _qkv

    Q, K, V = (x.astype(np.float16) for x in _qkv(np.random.default_rng(_RNG_SEED + 3),
                                                  T_q=3, T_k=5, d_k=6, d_v=4))
    assert t.COLD16 == 1e-5
    S = _scores(Q.astype(np.float64), K.astype(np.float64), t.COLD16)
    assert np.abs(S).max() > 2 * float(np.finfo(np.float16).max)
    assert np.abs(S).max() < 1e-30 * float(np.finfo(np.float32).max)
    with np.errstate(all="ignore"):
        assert np.isnan(factor_in_the_inputs_dtype(Q, K, V, t.COLD16)[1]).all()
    O, A = right(Q, K, V, t.COLD16)  # in float32, cast back
    assert O.dtype == A.dtype == np.float16 and np.isfinite(A).all()
    assert np.allclose(A.max(axis=-1), 1.0)  # one-hot to float16's precision
    # st10b: a factor, a tau or a divisor made a float16 passed at 1e-5, where they fit
    # float16; at COLDEST16 the factor is past its largest number and tau sqrt(d_k)
    # rounds to 0 in it, while in float32 both fit
    assert t.COLDEST16 == 1e-9
    half = np.finfo(np.float16)
    factor, divisor = 1 / (t.COLDEST16 * 6**0.5), t.COLDEST16 * 6**0.5
    assert 1 / (t.COLD16 * 6**0.5) < float(half.max) < factor
    with np.errstate(all="ignore"):
        assert np.isinf(np.float16(factor)) and np.float16(divisor) == 0
        assert np.float16(t.COLDEST16) == 0
        for attempt in (factor_in_float16_rest_in_float32, tau_in_the_inputs_dtype,
                        raw_scores_shifted_in_float16):
            assert np.isfinite(attempt(Q, K, V, t.COLD16)[1]).all()
            assert np.isnan(attempt(Q, K, V, t.COLDEST16)[1]).all()
    assert np.isfinite(np.float32(factor))
    O, A = right(Q, K, V, t.COLDEST16)
    assert O.dtype == A.dtype == np.float16 and np.isfinite(A).all()


def test_the_cold_leads_leave_the_other_keys_more_than_the_tolerance():
    # st10b: a row snapped to one-hot once its best scaled score led the next by 14 to
    # 18 (the softmax leaves e^-14 to e^-18 to the others), or once its largest weight
    # passed 1 - 1e-6 or 1 - 1e-7, passed: no row lay so near one-hot
    from attention.checkers import temperature as t

    rng = np.random.default_rng(t._RNG_SEED + 1)  # the checker's own inputs
    Q, K, V = (rng.standard_normal(s) for s in ((t.T_Q, t.D_K), (t.T_K, t.D_K), (t.T_K, t.D_V)))
    assert t.GAPS == (14.5, 16.0, 18.5)
    tops = []
    for g in t.GAPS:
        q = t._scaled_scores_row(K, (0.0, -g, -g, -60.0), t.COLD)
        assert np.allclose(_scores(q, K, t.COLD), [[0.0, -g, -g, -60.0]], rtol=0,
                           atol=1e-9)
        A = right(q, K, V, t.COLD)[1][0]
        assert 1 - A[0] > 1e-8  # off one-hot by more than the tolerance
        tops.append(A[0])
    assert 1 - tops[0] > 1e-6 and 1 - 1e-6 < tops[1] < 1 - 1e-7 < tops[2]
    for G in (14, 15, 17, 18):
        assert any(g > G for g in t.GAPS)


@pytest.mark.parametrize("tau", [2.0, 1e6])
def test_the_large_row_overflows_without_the_shift_at_ordinary_and_hot_temperatures(tau):
    # st7b: a shift made only when tau < 1 passed: every case with large scaled scores
    # was cold
    from attention.checkers import temperature as t

    rng = np.random.default_rng(t._RNG_SEED + 1)  # the checker's own inputs
    Q, K, V = (rng.standard_normal(s) for s in ((t.T_Q, t.D_K), (t.T_K, t.D_K), (t.T_K, t.D_V)))
    assert tau in t.SHIFT_TAUS
    for row in (t.LARGE, t.NEGATIVE):
        q = t._scaled_scores_row(K, row, tau)
        S = _scores(q, K, tau)
        assert np.allclose(S, [row], rtol=1e-9, atol=1e-6)
        with np.errstate(all="ignore"):
            E = np.exp(S)
            assert np.isnan(E / E.sum(axis=-1, keepdims=True)).any()  # inf/inf, 0/0
        assert np.isfinite(right(q, K, V, tau)[1]).all()


def test_a_floor_at_minus_30_moves_the_long_rows_output_past_the_tolerance():
    # st7b: a floor at -25 or -30 passed on 256 keys of unit values
    from attention.checkers import temperature as t

    rng = np.random.default_rng(t._RNG_SEED + 2)
    T_q, T_k, d_k, d_v = t.LONG
    Q, K, V = (rng.standard_normal(s) for s in ((T_q, d_k), (T_k, d_k), (T_k, d_v)))
    V = t.V_SIZE * V
    O, A = right(Q, K, V, t.LONG_TAU)
    O30, A30 = floor_at_30(Q, K, V, t.LONG_TAU)
    assert np.abs(A30 - A).max() < 1e-8 < np.abs(O30 - O).max()
    assert np.abs(floor_at_25(Q, K, V, t.LONG_TAU)[1] - A).max() > 1e-8


def _float16_inputs():
    from attention.checkers._engine import _RNG_SEED, _qkv
    return tuple(x.astype(np.float16) for x in _qkv(np.random.default_rng(_RNG_SEED + 3),
                                                    T_q=3, T_k=5, d_k=6, d_v=4))


def test_one_maximum_per_head_in_float32_is_told_the_shift_at_float16s_cold_tau():
    """(st11b) At tau = 1e-5 the float16 inputs' scaled scores pass 65504; an attempt
    that computes them in float32 (finite there) and shifts by one maximum for the
    whole array is told the shift, not float16 overflow; one computed in float16 is
    still told float16 overflow."""
    from attention.checkers import temperature
    Q, K, V = _float16_inputs()
    ok, detail = temperature._float16_case(one_maximum_per_head_in_float32, Q, K, V,
                                           temperature.COLD16)
    assert not ok and OWN_MAXIMUM in detail and "computed in float16" not in detail
    ok, detail = temperature._float16_case(float16_throughout, Q, K, V,
                                           temperature.COLD16)
    assert not ok and "computed in float16" in detail and OWN_MAXIMUM not in detail
    assert temperature._float16_case(right, Q, K, V, temperature.COLD16)[0]


@pytest.mark.parametrize("attempt", [shift_if_any_score_passes_709,
                                     shift_rows_whose_maximum_passes_700,
                                     shift_all_if_some_score_passes_700])
def test_float16_inputs_at_tau32_are_told_float32s_exp_limit(attempt):
    """(st11b) The float16 inputs at tau = 0.01 (scaled scores about 150, worked in
    float32) fail a shift taken only past float64's exp limit, and are told so."""
    from attention.checkers import temperature
    Q, K, V = _float16_inputs()
    top = np.abs(Q.astype(float) @ K.T.astype(float)).max() / (
        temperature.TAU32 * np.sqrt(Q.shape[-1]))
    assert 88.73 < top < 700
    ok, detail = temperature._float16_case(attempt, Q, K, V, temperature.TAU32)
    assert not ok and "float64's exp limit (709.78) is not float32's (88.72)" in detail
    assert temperature._float16_case(right, Q, K, V, temperature.TAU32)[0]


def test_the_subnormal_row_moves_the_unshifted_weights_by_more_than_1e_3():
    """(st11b) exp() of scaled scores near -740 is subnormal in float64: without the
    shift the weights there are off by about 4e-3; with it they are right."""
    from attention.checkers import temperature
    rng = np.random.default_rng(0)
    K = rng.standard_normal((4, 7))
    q = temperature._scaled_scores_row(K, temperature.SUBNORMAL, temperature.COLD)
    S = q @ K.T / (temperature.COLD * np.sqrt(7))
    assert np.allclose(S, temperature.SUBNORMAL, atol=1e-9)
    E = np.exp(S)
    assert 0 < E.max() < np.finfo(np.float64).tiny
    want = _softmax(S)
    assert np.abs(E / E.sum() - want).max() > 1e-3


def test_the_wide_float16_inputs_raw_products_overflow_or_round_in_float16_only():
    """(st13b) The textbook line Q @ K.T / (tau * np.sqrt(d_k)) on float16 inputs
    passed: no float16 case's raw products passed 65504 or lost a scaled score's
    worth to float16's rounding. At tau = 1, entries of size 30 at d_k = 128 (K = Q)
    overflow float16 in Q K^T, though the scaled scores fit; entries of size 20 at
    d_k = 64 give products near 25,600, 16 apart in float16, where two keys 2.5
    apart tie; in float32 both are exact or finite and the weights right."""
    from attention.checkers import temperature as t

    Qw, Kw, Vw, Qr, Kr, Vr = t._wide_float16_inputs()
    half = float(np.finfo(np.float16).max)
    assert t.WIDE16 == (30.0, 128) and t.ROUND16 == (20.0, 64)
    assert Qw.shape[-1] == 128 and Qr.shape[-1] == 64
    R = Qw.astype(float) @ Kw.T.astype(float)
    assert R.max() > half > R.max() / np.sqrt(128)  # the raw overflow, not the scaled
    with np.errstate(all="ignore"):
        assert np.isinf(Qw @ Kw.T).any() and np.isnan(textbook_line_in_float16(
            Qw, Kw, Vw, 1.0)[1]).any()
    R = Qr.astype(float) @ Kr.T.astype(float)
    assert np.abs(R).max() < half and 16384 < np.abs(R).min()
    assert R[0, 0] - R[0, 1] == R[1, 0] - R[1, 1] == 2.5  # 0.3125 once scaled
    R16 = (Qr @ Kr.T).astype(float)
    assert R16[0, 0] == R16[0, 1] and R16[1, 0] == R16[1, 1]  # tied in float16
    want = _softmax(R / 8.0)
    assert np.abs(_softmax(R16 / 8.0) - want).max() > 10 * 5e-3  # the tolerance
    for Q, K, V in ((Qw, Kw, Vw), (Qr, Kr, Vr)):
        O, A = right(Q, K, V, 1.0)  # in float32, cast back
        assert A.dtype == np.float16 and np.isfinite(A).all()
        assert np.abs(A - _softmax(Q.astype(float) @ K.T.astype(float)
                                   / np.sqrt(Q.shape[-1]))).max() < 1e-3


def test_the_row_near_minus_1e5_and_its_mirror_tell_a_clip_from_a_one_sided_bound():
    """(st13b) Scores clipped at +-1e4 make every weight of the row near -1e5 1/T_k
    and were told only a difference; np.clip makes the mirrored row (near +1e5)
    uniform too, np.maximum(S, -L) and NaN replaced by 1/T_k after a floor on the
    shift do not, and are told apart by it."""
    from attention.checkers import temperature as t

    rng = np.random.default_rng(t._RNG_SEED + 1)  # the checker's own inputs
    Q, K, V = (rng.standard_normal(s) for s in ((t.T_Q, t.D_K), (t.T_K, t.D_K), (t.T_K, t.D_V)))
    low = t._scaled_scores_row(K, t.NEGATIVE_FAR, t.COLD)
    high = t._scaled_scores_row(K, [-s for s in t.NEGATIVE_FAR], t.COLD)
    assert np.allclose(_scores(low, K, t.COLD), [t.NEGATIVE_FAR], rtol=0, atol=1e-6)
    assert np.allclose(_scores(high, K, t.COLD), [[-s for s in t.NEGATIVE_FAR]],
                       rtol=0, atol=1e-6)
    for q in (low, high):
        assert not np.allclose(right(q, K, V, t.COLD)[1], 1 / t.T_K, atol=0.1)
        assert np.all(clip_1e4(q, K, V, t.COLD)[1] == 1 / t.T_K)
    for attempt in (scores_floored_at_minus_1e4, floor_on_the_shift_nan_made_uniform):
        assert np.all(attempt(low, K, V, t.COLD)[1] == 1 / t.T_K)
        assert np.allclose(attempt(high, K, V, t.COLD)[1], right(high, K, V, t.COLD)[1])


def test_rows_of_zeros_are_not_told_one_hot(capsys):
    # st14b: rows of zeros (all weights 0) were told "exactly one-hot (an argmax?)",
    # and the tie's addendum looked at the whole array's largest weight
    from attention.checkers import temperature

    A = np.array([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    want = np.full((2, 3), 1 / 3)
    S = np.zeros((2, 3))
    assert "one-hot" not in temperature._shortcut(A, want, 1e-12, S)
    assert "one-hot" in temperature._shortcut(np.eye(3)[:2], want, 1e-12, S)
    assert checkers.check_attention_with_temperature(no_shift_then_nan_to_num) is False
    out = capsys.readouterr().out
    assert "exactly one-hot" not in out and "an argmax picks only one" not in out, out
    # st22b: named as NaN replaced by 0 after no shift, not only "rows sum to 0"
    assert "replacing the NaN weights by 0 (np.nan_to_num(A), whose default" in out, out


def test_the_pages_skeleton_is_told_its_error_in_a_single_line():
    # st22b: __init__.py and exercises.md promise a single line when every case fails
    # the same way; the skeleton's NameError printed 16, the batched ones with the batch
    # hint (and the float32 row near -200 with a floor on the shift)
    run = run_once(_check_on_the_fixed_settings, the_pages_skeleton)
    assert run.text.splitlines() == ["✗ every case: raised NameError: name 'O' is not "
                                     "defined", "0 of 16 checks passed."], run.text


def test_the_batch_hint_is_given_to_shape_errors_only():
    from attention.checkers import temperature as t

    Q = np.zeros((5, 6, 3, 7))
    K = np.zeros((5, 6, 4, 7))
    einsum = lambda Q, K, V, tau: np.einsum("qd,kd->qk", Q, K)  # noqa: E731
    _, told = t._attempt(einsum, Q, K, K, 1.0)
    assert "on inputs of shape (5, 6, T, d)" in told and "np.swapaxes(K, -1, -2)" in told
    for exc in (NameError("name 'O' is not defined"), ZeroDivisionError("division by zero"),
                TypeError("unsupported operand type(s)")):
        def raising(Q, K, V, tau, exc=exc):
            raise exc
        _, told = t._attempt(raising, Q, K, K, 1.0)
        assert told == f"raised {type(exc).__name__}: {exc}", told


def test_the_float32_row_near_minus_200_names_a_floor_only_for_what_a_floor_gives():
    # st22b: K untransposed when square failed there and was told a floor on the shift
    report = run_once(_check_on_the_fixed_settings, K_untransposed_when_square).text
    line = next(x for x in report.splitlines() if "float32 inputs give" in x)
    assert "A for float32 inputs with every score near -200 differs" in line
    assert "floor on the shift" not in line
    for floored in (shift_floored_at_80_in_float32, shift_floored_at_100_in_float32):
        report = run_once(_check_on_the_fixed_settings, floored).text
        assert "score lies near -200 (in float32, exp() is 0 below about -103), and a " \
            "floor on the shift" in report


@pytest.mark.parametrize("bound", [2e-3, 1.2e-3, 1e-3, 9e-4, 7e-4, 6e-4, 5e-4, 4e-4,
                                   3.2e-4, 3e-4, 2.5e-4])
def test_a_first_order_shortcut_below_any_spread_is_seen_or_right_to_the_tolerance(bound):
    # st22b: one taken where a row's scaled scores spread by less than 1e-3 passed (no
    # probe between 1e3 and 1e6); now it fails wherever it moves the results by 1e-8 on
    # the checker's inputs at the warm temperatures
    from attention.checkers import temperature as t

    attempt = _first_order_below_a_spread(bound)
    rng = np.random.default_rng(t._RNG_SEED + 1)  # the checker's own first inputs
    Q, K, V = (rng.standard_normal(s) for s in ((t.T_Q, t.D_K), (t.T_K, t.D_K),
                                                 (t.T_K, t.D_V)))
    off = max(float(np.abs(got - want).max()) for tau in np.geomspace(1e3, 1e6, 241)
              for got, want in zip(attempt(Q, K, V, tau), right(Q, K, V, tau)))
    verdict = run_once(_check_on_the_fixed_settings, attempt).result
    if off > 1.25e-8:
        assert verdict is False, (bound, off)
    if off <= 1e-8:
        assert verdict is True, (bound, off)
    assert t.WARM[:2] == (100.0, 1e3) and 4000 in t.WARM
    assert max(np.diff(np.log10(t.WARM[1:6]))) <= np.log10(1.5) + 1e-12


def test_the_long_rows_lead_every_other_key_as_stated():
    # st15b: each of the 4095 other keys lies g to g + 0.5 below the best once scaled,
    # so that their weights, e^-g each at most, add up to more than the tolerance in
    # the weights (g = 20, 25) and, times values of size 1000, in the output (g = 30)
    from attention.checkers import temperature as t
    for g in t.LONG_LEADS:
        q, K, V = t._long_lead_row(g, t.COLD)
        S = (q @ K.T)[0] / (t.COLD * np.sqrt(q.shape[-1]))
        assert K.shape == (4096, 8) and V.shape == (4096, 3)
        assert np.argmax(S) == 0 and abs(S[0]) < 1e-9
        assert np.all(S[1:] <= -g + 1e-9) and np.all(S[1:] >= -g - 0.5 - 1e-9)
        rest = _softmax(S)[1:].sum()
        assert rest > (1e-8 if g < 30 else 1e-10), (g, rest)


def test_the_pages_say_the_checker_runs_long_rows():
    # st15b: the cold rows of 4096 keys are several now (one random, three led by 20,
    # 25 and 30): the exercise's summary and the solution's paragraph say "long rows"
    from tests.pages._common import CHAPTERS

    exercises = " ".join((CHAPTERS / "exercises.md").read_text().split())
    page = " ".join((CHAPTERS / "soft-retrieval.md").read_text().split())
    assert ("very hot temperatures, a few drawn afresh on each call, on long rows, on "
            "rows whose scores lie far apart") in exercises
    assert "`float16` inputs, on long rows, on rows whose scores lie far apart" in page


def test_the_float32_hot_inputs_tell_the_keys_apart_where_tau_is_inf_in_float32():
    # st16b: tau cast to float32 (w.type(tau)) passed: no float32 case was past
    # 3.4e38, where tau is inf in float32 and the weights uniform
    from attention.checkers import temperature as t

    Q, K, V = (np.array(x, dtype=np.float32) for x in (t.HOT32_Q, t.HOT32_K, t.HOT32_V))
    assert t.HOT32 > float(np.finfo(np.float32).max)
    with np.errstate(over="ignore"):
        assert np.isinf(np.float32(t.HOT32))
    assert np.isfinite(Q @ K.T).all()  # the raw products fit float32
    want = attention.scaled_dot_product_attention(
        *(x.astype(np.float64) for x in (Q, K, V)), temperature=t.HOT32)[1]
    assert np.abs(want - 1 / 3).max() > 0.02  # far from uniform
    O, A = right(Q, K, V, t.HOT32)
    assert A.dtype == np.float32 and np.abs(A - want).max() < 5e-8
    A_bad = tau_cast_to_the_work_dtype(Q, K, V, t.HOT32)[1]
    assert np.all(A_bad == np.float32(1 / 3))


def test_the_float32_cold_cases_overflow_float32_only_when_scaled_first():
    # st20b: the page's solution scaled float32 scores before the shift and passed:
    # float32 ran cold at 0.01 only
    from attention.checkers import temperature as t

    big = float(np.finfo(np.float32).max)
    Q, K, V = (np.array(x, dtype=np.float32) for x in (t.HOT32_Q, t.HOT32_K, t.HOT32_V))
    raw = float(np.abs(Q.astype(np.float64) @ K.T.astype(np.float64)).max())
    assert raw < big  # the raw scores fit float32 ...
    rng = np.random.default_rng(0)
    Qo, Ko, Vo = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (5, 4), (5, 2)))
    cases = [(Q, K, V, tau) for tau in t.COLD32_ON_HOT32] + [(Qo, Ko, Vo, t.COLD32[-1])]
    for q, k, v, tau in cases:
        d_k = q.shape[-1]
        # ... the scaled scores, or at 1e-40 the factor itself, do not
        assert raw / (tau * d_k**0.5) > big or 1 / (tau * d_k**0.5) > big
        want = attention.scaled_dot_product_attention(
            *(x.astype(np.float64) for x in (q, k, v)), temperature=tau)[1]
        assert np.isfinite(want).all() and np.allclose(want.max(axis=-1), 1)  # one-hot
        with np.errstate(all="ignore"):
            assert np.isnan(scaled_in_float32_before_the_shift(q, k, v, tau)[1]).any()
        A = right(q, k, v, tau)[1]
        assert A.dtype == np.float32 and np.abs(A - want).max() < 1e-6
    # at 1e-30 the factor fits float32 (so that a NaN below some threshold shows there)
    assert 1 / (t.COLD32[0] * 4**0.5) < big
    assert 1 / (t.COLD32[-1] * 4**0.5) > big


def test_the_page_says_a_large_tau_is_inf_in_float32():
    # st16b: the solution's paragraph says that a tau past float32's largest number
    # (HOT32, which the checker runs) is inf there; st20b: the work is float64
    from attention.checkers import temperature as t
    from tests.pages._common import CHAPTERS

    page = " ".join((CHAPTERS / "soft-retrieval.md").read_text().split())
    assert ("a $\\tau$ outside `float32`'s range, divided into a `float32` array as a "
            "Python float, is made a `float32` inf or 0 (NumPy 2's promotion rules)") in page
    assert t.HOT32 > float(np.finfo(np.float32).max)
    with np.errstate(over="ignore"):
        assert (np.ones(2, np.float32) * t.HOT32).dtype == np.float32
        assert np.isinf(np.ones(2, np.float32) * t.HOT32).all()
    with np.errstate(divide="ignore"):  # "or 0": a tau below float32's smallest subnormal
        assert (np.ones(2, np.float32) / 1e-310).dtype == np.float32
        assert np.isinf(np.ones(2, np.float32) / 1e-310).all()


def test_the_rising_row_has_16411_keys_and_its_maximum_grows_in_every_block():
    # st16b: an online softmax in blocks of 4096 without the rescale passed: no row
    # had more than 4096 keys; st19b: in blocks of 8192 or 16384 it passed the row
    # of 5003 keys (one block)
    from attention.checkers import temperature as t

    q, K, V = t._rising_row(t.COLD)
    assert t.RISING_T == 16411 and t.RISING_T > 2 ** 14
    assert all(t.RISING_T % p for p in range(2, 129))  # prime (no small divisor)
    assert K.shape == (16411, 8) and V.shape == (16411, 3)
    S = (q @ K.T)[0] / (t.COLD * np.sqrt(8))
    assert abs(S[-1]) < 1e-9 and np.argmax(S) == 16411 - 1
    assert S.min() < -t.RISE + 0.1
    for block in (64, 1000, 4096, 8192, 16384):  # the maximum grows in every block
        tops = [S[s:s + block].max() for s in range(0, 16411, block)]
        assert all(b > a for a, b in zip(tops, tops[1:])), block
    O, A = right(q, K, V, t.COLD)
    for block in (64, 4096, 8192, 16384):
        O_bad, A_bad = online_softmax_without_the_rescale(q, K, V, t.COLD, block)
        assert np.abs(A_bad - A).max() > 1e-6 and np.abs(O_bad - O).max() > 1e-2
    # a block at least as long as the row is one pass, exact
    O_one, A_one = online_softmax_without_the_rescale(q, K, V, t.COLD, 16411)
    assert np.allclose(A_one, A, rtol=0, atol=1e-12)


def test_an_unrescaled_online_softmax_is_named_with_its_block_size():
    # st19b: in blocks of 1024 it was told only that its rows do not sum to 1
    from attention.checkers import temperature as t

    assert t.RESCALE_BLOCKS[-1] == 16384 and 1024 in t.RESCALE_BLOCKS
    rng = np.random.default_rng(0)
    Q = rng.standard_normal((2, 8))
    K = rng.standard_normal((4096, 8))
    V = rng.standard_normal((4096, 3))
    named = t._rescale_named(online_without_the_rescale_in_blocks_of_1024, Q, K, V,
                             0.01)
    # (here blocks of 256, 512 and 1024 keys give the same results: all are named)
    assert "in blocks of 256, 512 or 1024 keys?" in named
    assert t._rescale_named(right, Q, K, V, 0.01) == ""


def test_the_near_overflow_row_overflows_only_in_the_sum_and_the_far_row_is_finite():
    # st17b: a shift made only where exp() of the row maximum would overflow passed
    # (no row's exponentials were finite with an overflowing sum), and so did floors
    # on the scores or the shift below -1e5 (no row lay farther down)
    from attention.checkers import temperature as t

    rng = np.random.default_rng(t._RNG_SEED + 1)  # the checker's own inputs
    Q, K, V = (rng.standard_normal(s) for s in ((t.T_Q, t.D_K), (t.T_K, t.D_K), (t.T_K, t.D_V)))
    q = t._scaled_scores_row(K, t.NEAR_OVERFLOW, t.COLD)
    S = _scores(q, K, t.COLD)
    assert np.allclose(S, [t.NEAR_OVERFLOW], rtol=0, atol=1e-9)
    assert S.max() < 709.0 < np.log(np.finfo(np.float64).max)
    with np.errstate(over="ignore"):
        E = np.exp(S)
        assert np.isfinite(E).all() and np.isinf(E.sum())
    assert np.all(shift_only_where_the_maximum_passes_709(q, K, V, t.COLD)[1] == 0)
    assert np.isfinite(right(q, K, V, t.COLD)[1]).all()
    q = 1e300 * t._scaled_scores_row(K, [s / 1e300 for s in t.VERY_NEGATIVE], t.COLD)
    S = _scores(q, K, t.COLD)
    assert np.isfinite(S).all() and np.allclose(S, [t.VERY_NEGATIVE], rtol=1e-9)
    assert len(set(S[0])) == t.T_K and S.max() < -1e299
    A = right(q, K, V, t.COLD)[1]
    assert np.array_equal(A, [[1.0, 0.0, 0.0, 0.0]])
    assert np.all(scores_floored_at_minus_1e9(q, K, V, t.COLD)[1] == 1 / t.T_K)
    assert np.isnan(shift_floored_at_minus_1e6(q, K, V, t.COLD)[1]).all()


def test_the_temperatures_between_the_others_fill_every_quarter_decade():
    # st17b: an attempt wrong only for 2 < tau < 5 passed
    from attention.checkers import temperature as t

    taus = set(t.BETWEEN_TAUS) | set(t.TAUS) | {t.COLD, t.LONG_TAU, t.OTHER_TAU, 1.5}
    for i in range(-12, 8):  # [10^(i/4), 10^((i+1)/4)] from 1e-3 to 100
        lo, hi = 10 ** (i / 4), 10 ** ((i + 1) / 4)
        assert any(lo * 0.99 <= x <= hi * 1.01 for x in taus), (lo, hi)
    # st18b: the other sizes' taus alone leave no gap wider than an eighth of a decade
    # from 1e-3 to 1e3, and none is a short decimal (tau rounded to 6 digits shows)
    grid = sorted(t.BETWEEN_TAUS)
    edges = [1e-3] + grid + [1e3]
    assert max(np.diff(np.log10(edges))) <= 1 / 8 + 1e-12
    assert all(float(f"{x:.7g}") != x for x in grid)


def test_the_temperatures_drawn_afresh_lie_from_1e_3_to_1e3_and_the_right_answer_passes_there(
        monkeypatch, capsys):
    from attention.checkers import temperature as t

    for seed in range(200):
        drawn = t._draw_taus(seed)
        assert len(drawn) == t.DRAWN_TAUS > 0
        assert all(1e-3 <= x <= 1e3 and float(f"{x:.7g}") != x for x in drawn)
    assert t._draw_taus(1) == t._draw_taus(1) != t._draw_taus(2)
    assert checkers.check_attention_with_temperature(right) is True


def test_a_mistake_seen_only_at_a_drawn_temperature_prints_it_and_the_seed(monkeypatch,
                                                                         capsys):
    from attention.checkers import temperature as t

    monkeypatch.setattr(t, "_draw_taus", lambda seed: (0.05,))
    monkeypatch.setattr(t, "_fresh_seed", lambda: 42)
    # the fixed temperatures nearest 0.05 are 0.0437 and 0.0582: wrong between them
    assert not any(0.045 < x < 0.055 for x in t.BETWEEN_TAUS + t.TAUS)
    attempt = lambda Q, K, V, tau: right(Q, K, V, 1.05 * tau if 0.045 < tau < 0.055
                                         else tau)  # noqa: E731
    assert checkers.check_attention_with_temperature(attempt) is False
    out = capsys.readouterr().out
    assert "at tau = 0.05, drawn afresh for this call" in out
    assert "_draw_taus(42) in attention.checkers.temperature draws it again" in out
    assert "15 of 16 checks passed." in out


@pytest.mark.parametrize("attempt, said", [
    (inverse_sqrt_d_k_in_float32, "1/sqrt(d_k) was rounded to float32"),
    (O_returned_as_a_list, "O is a list, not an array")])
def test_every_failing_line_names_the_mistake(attempt, said):
    # st25b: each rejection names the actual mistake (np.float32(1 / np.sqrt(d_k)) was
    # told "no rounding to float32 gives that factor", and, on the query whose scores
    # all lie below -1000, only how far it was off)
    report = run_once(_check_on_the_fixed_settings, attempt).text
    failed = [line for line in report.splitlines() if line.startswith("✗")]
    assert failed and all(said in line for line in failed), failed


def test_the_pages_say_the_temperatures_the_checker_runs():
    # st18b: the solution's paragraph and exercises.md say the range, the grid and the
    # draws; each is what the checker runs
    from attention.checkers import temperature as t
    from tests.pages._common import CHAPTERS

    page = " ".join((CHAPTERS / "soft-retrieval.md").read_text().split())
    assert ("at many temperatures and sizes (from $10^{-310}$ to $10^{306}$; between "
            "$10^{-3}$ and $10^{3}$ one every eighth of a decade, of many digits, and a "
            "few drawn afresh on each call)") in page
    notes = " ".join((CHAPTERS / "exercises.md").read_text().split())
    assert "from very cold to very hot temperatures, a few drawn afresh on each call" in notes
    assert t.BEYOND_COLD == 1e-310 and t.BEYOND_HOT == 1e306 and t.DRAWN_TAUS > 0
    # (the coldest and hottest the checker runs: every other is nearer 1)
    assert t.BEYOND_COLD < t.EXTREME_COLD and t.BEYOND_HOT > t.EXTREME_HOT
    # "at 1e-310, which the checker runs, that factor is inf even in float64"
    with np.errstate(over="ignore"):
        assert np.isinf(1 / (t.BEYOND_COLD * np.sqrt(t.D_K)))
    assert "that factor is inf even in `float64`" in page
    edges = [1e-3] + sorted(t.BETWEEN_TAUS) + [1e3]
    assert max(np.diff(np.log10(edges))) <= 1 / 8 + 1e-12
    assert all(float(f"{x:.7g}") != x for x in t.BETWEEN_TAUS)


def test_the_exercise_asks_what_the_worked_example_does_not_give():
    # st18b: the paragraph above the exercise already says that the lookup returns v_2
    # as the score gap grows; question 1 asks what dividing by tau does to every gap
    from tests.pages._common import CHAPTERS

    source = (CHAPTERS / "soft-retrieval.md").read_text()
    exercise = source[source.index(":label: ex-temperature"):
                      source.index("```{solution-start} ex-temperature")]
    q1 = " ".join(exercise.split("\n1. ", 1)[1].split("\n2. ", 1)[0].split())
    assert "what does dividing the scores by $\\tau$ do to the gap" in q1
    assert "What does the output $O$ become as" not in q1


def test_the_float32_wide_inputs_overflow_only_in_float32_products():
    # st23b: raw products of entries of size 3e19 pass 3.4e38 where the scaled scores at
    # 1e39 lie near 0.64: the float32 recipe the hints gave is NaN there
    from attention.checkers import temperature as t

    Q, K = (np.array(x, dtype=np.float32) for x in (t.WIDE32_Q, t.WIDE32_K))
    R64 = Q.astype(np.float64) @ K.astype(np.float64).T
    assert np.abs(R64).max() > np.finfo(np.float32).max
    assert np.abs(R64).max() / (t.HOT32 * np.sqrt(2)) == pytest.approx(0.636, abs=1e-3)
    with np.errstate(all="ignore"):
        assert not np.isfinite(Q @ K.T).all()


@pytest.mark.parametrize("dtype, taus, atol", [(np.float32, (1e-6, 3e-7), 1e-5),
                                               (np.float16, (1.5e-8,), 5e-3)])
def test_the_near_ties_are_wrong_in_float32_products_and_right_in_float64(dtype, taus, atol):
    from attention.checkers import temperature as t

    Q, K, V = t._tie_inputs(dtype)
    for tau in taus:
        want = attention.scaled_dot_product_attention(
            *(x.astype(np.float64) for x in (Q, K, V)), temperature=tau)[1]
        in32 = _softmax(_shifted(*(x.astype(np.float32) for x in (Q, K)), tau))
        in64 = _softmax(_shifted(*(x.astype(np.float64) for x in (Q, K)), tau))
        assert np.abs(in32 - want).max() > 50 * atol
        assert np.abs(in64 - want).max() < 1e-9


def test_the_hints_recipe_casts_to_float64_before_the_product():
    # st23b: the hints said to compute the raw scores in float32 for float32 inputs
    from attention.checkers import temperature as t

    assert "promote_types" not in t._WORK and ".astype(np.float64) before the product" in t._WORK
    assert "w.type(1 / (tau" not in t._float32_scale(1 / (np.float32(0.3) * 7 ** 0.5), 0.3, 7)
