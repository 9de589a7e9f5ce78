"""The checkers' engine (attention.checkers._engine): cases run on copies of the inputs,
results checked for their number and dtype, a failing answer named from the exercise's
table of mistakes, one report."""

from __future__ import annotations

import re

import numpy as np
import pytest

from attention.checkers import _engine as engine


def _same(x, y):
    return np.shape(x) == np.shape(y) and np.allclose(x, y)


def test_named_gives_the_first_mistake_the_answer_matches_and_skips_what_it_cannot_make():
    def cannot(): raise ValueError("operands could not be broadcast")
    right, got = np.array([1.0, 2.0]), np.array([2.0, 4.0])
    table = [("raises", cannot), ("halved", right / 2), ("doubled", lambda: 2 * right),
             ("doubled again", 2 * right)]
    assert engine._named(got, table, _same) == "doubled"
    assert list(engine._matching(got, table, _same)) == ["doubled", "doubled again"]
    assert engine._named(got + 1, table, _same) == ""


def test_a_mistake_that_changes_nothing_on_a_case_names_nothing_there():
    right = np.array([0.0, 0.0])
    table = [("doubled", 2 * right), ("negated", -right)]  # both equal the right answer
    assert engine._named(right, table, _same) == "doubled"
    assert engine._named(right, table, _same, want=right) == ""


def test_results_are_checked_for_their_number_and_for_none():
    args = dict(Q=np.ones(2))
    assert engine._results(lambda Q: (Q, Q), args)[0] is not args["Q"]  # a copy
    with pytest.raises(TypeError, match=r"must return a pair \(O, A\), got ndarray"):
        engine._results(lambda Q: Q, args)
    with pytest.raises(TypeError, match=r"must return three arrays \(dQ, dK, dV\)"):
        engine._results(lambda Q: (Q, Q), args, names=("dQ", "dK", "dV"))
    with pytest.raises(TypeError, match=r"A is None: return \(O, A\)"):
        engine._results(lambda Q: (Q, None), args)


def test_an_attempt_that_changes_its_input_in_place_is_rejected_and_the_callers_array_kept():
    Q = np.ones(3)

    def scales_in_place(Q):
        Q /= 2
        return Q

    with pytest.raises(engine.ChangedInPlace, match="changed its argument Q in place"):
        engine._on_copies(scales_in_place, dict(Q=Q))
    assert np.array_equal(Q, np.ones(3))


def test_the_dtype_message_names_what_is_wrong_and_nothing_when_all_is_kept():
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    assert engine._dtype_rejection(f32, dict(O=f32, A=f32)) == ""
    both = engine._dtype_rejection(f32, dict(O=f64, A=f64))
    assert "O of dtype float64 and A of dtype float64" in both
    assert "O, A are float64 for float32 inputs" in both and "np.sqrt(d_k)" in both
    # the explicit cast first (st11a: an .astype(np.float64) was told of np.sqrt only)
    assert 0 <= both.index(".astype(np.float64)") < both.index("np.sqrt(d_k)")
    half = engine._dtype_rejection(np.float16, dict(O=f64, A=f64))
    assert "turns float16 arrays into float64" in half  # the same scalar, float16 inputs
    one = engine._dtype_rejection(f32, dict(O=f32, A=f64))
    assert "A was not cast back" in one and "np.sqrt" not in one


def test_the_report_merges_identical_failures_into_one_line_and_counts_the_cases(capsys):
    assert not engine._report([("a", False, "raised X"), ("b", False, "raised X")], True)
    assert capsys.readouterr().out == "✗ every case: raised X\n0 of 2 checks passed.\n"
    assert not engine._report([("a", True, ""), ("b", False, "wrong")], True)
    assert capsys.readouterr().out == "✓ a\n✗ b: wrong\n1 of 2 checks passed.\n"


def test_a_case_that_raises_is_a_failed_case_with_the_exception_named():
    def case():
        raise ZeroDivisionError("division by zero")
    assert engine._run("c", case) == ("c", False, "raised ZeroDivisionError: division by zero")
    assert engine._run("c", lambda: (True, "")) == ("c", True, "")


def test_the_fitted_scale_recovers_the_factor_of_a_scaled_softmax_and_none_otherwise():
    R = np.random.default_rng(0).standard_normal((3, 4))
    assert engine._fitted_scale(engine._softmax(0.37 * R), R) == pytest.approx(0.37)
    assert engine._fitted_scale(np.full((3, 4), 0.25) + [0.1, -0.1, 0, 0], R) is None
    mask = np.ones((3, 4), bool)
    mask[:, 0] = False
    masked = engine._softmax(np.where(mask, 2.0 * R, -np.inf))
    assert engine._fitted_scale(masked, R, mask) == pytest.approx(2.0)


def test_results_computed_in_float32_are_told_by_their_entries_being_float32_numbers():
    rng = np.random.default_rng(0)
    ref = rng.standard_normal(50)
    in_float32 = ref.astype(np.float32).astype(np.float64)
    with_nan = np.where(np.arange(50) == 3, np.nan, in_float32)
    assert engine._float32_valued(in_float32, ref)
    assert engine._float32_valued(with_nan, ref)  # NaN does not hide the sign
    assert not engine._float32_valued(ref + 1e-9, ref)  # float64 noise
    # a reference whose entries are float32 numbers too cannot tell
    assert not engine._float32_valued(np.zeros(3), np.zeros(3))


def test_the_narrow_precision_names_float16_before_float32_and_nothing_for_float64():
    x = np.random.default_rng(4).standard_normal(8)
    assert engine._narrow_precision(x.astype(np.float16).astype(np.float64), x) == "float16"
    assert engine._narrow_precision(x.astype(np.float32).astype(np.float64), x) == "float32"
    assert engine._narrow_precision(x, x) == ""
    # a reference that is itself float32-valued (zeros, a one-hot row) says nothing
    assert engine._narrow_precision(np.zeros(4), np.zeros(4)) == ""
    assert engine._float32_valued(x.astype(np.float16).astype(np.float64), x, np.float16)


def test_a_banned_function_may_carry_its_own_message():
    """A banned entry (function, message) is refused with that message; the others
    with the shared one (st7a: torch's autograd beside the library's backward)."""
    from attention.checkers._engine import Rejected, _refusing_the_library

    def library_one():
        return 1

    def other_one():
        return 2

    banned = {"lib.one": library_one, "torch.two": (other_one, "no {name} here")}
    for attempt, said in ((lambda: library_one(), "refused lib.one"),
                          (lambda: other_one(), "no torch.two here")):
        watched = _refusing_the_library(attempt, banned, "refused {name}")
        with pytest.raises(Rejected, match=re.escape(said)):
            watched()
    assert _refusing_the_library(lambda: 3, banned, "refused {name}")() == 3


def test_a_refused_call_that_then_raises_is_told_the_refusal_not_the_error():
    """st22a: attention.softmax on float16 scores raised ValueError after the call, and
    the library's error was printed instead of the refusal."""
    from attention.checkers._engine import Rejected, _refusing_the_library

    def library_one():
        return 1

    def calls_then_raises():
        library_one()
        raise ValueError("x contains +inf")

    def raises_alone():
        raise ValueError("its own error")

    banned = {"lib.one": library_one}
    with pytest.raises(Rejected, match="refused lib.one"):
        _refusing_the_library(calls_then_raises, banned, "refused {name}")()
    with pytest.raises(ValueError, match="its own error"):  # nothing refused: its error
        _refusing_the_library(raises_alone, banned, "refused {name}")()


def test_torchs_softmax_is_refused_as_a_function_a_built_in_and_a_tensor_method():
    """st9a: torch.softmax, F.softmax and Tensor.softmax passed the attention checker."""
    torch = pytest.importorskip("torch")
    from attention.checkers._engine import Rejected, _refusing_the_library, _torch_softmax

    functions, builtins, methods = _torch_softmax("refused {name}")
    S = torch.zeros(2, 3)
    for attempt, said in ((lambda: torch.softmax(S, -1), "refused torch.softmax"),
                          (lambda: torch.nn.functional.softmax(S, dim=-1),
                           "refused torch.nn.functional.softmax"),
                          (lambda: S.softmax(-1), "refused Tensor.softmax"),
                          (lambda: torch.Tensor.softmax(S, -1), "refused Tensor.softmax")):
        watched = _refusing_the_library(attempt, functions, "refused {name}", builtins,
                                        methods)
        with pytest.raises(Rejected, match=re.escape(said)):
            watched()
    # torch's other operations, and a softmax of the reader's own, pass
    own = _refusing_the_library(lambda: (S.exp() / S.exp().sum(-1, keepdim=True)).sum(),
                                functions, "refused {name}", builtins, methods)
    assert float(own()) == pytest.approx(2.0)


def test_every_entry_point_of_torchs_attention_is_refused_and_other_torch_passes():
    """st25b: torch.ops.aten._scaled_dot_product_attention_math and
    F.multi_head_attention_forward passed the temperature checker, which refused only
    F.scaled_dot_product_attention and the public aten operator. Each entry point is told
    by the name it was called by (an overload by its own), nn.MultiheadAttention (its
    slow path runs F.multi_head_attention_forward) included."""
    import warnings

    torch = pytest.importorskip("torch")
    from attention.checkers._engine import (TORCH_ATTENTION_REFUSED, Rejected,
                                            _refusing_the_library, _torch_attention)

    functions, builtins = _torch_attention("refused {name}")
    F = torch.nn.functional
    q = torch.randn(1, 1, 3, 4, dtype=torch.float64)
    eye = torch.eye(4, dtype=torch.float64)
    aten = torch.ops.aten
    mha = torch.nn.MultiheadAttention(4, 1, dtype=torch.float64)
    attempts = [
        (lambda: F.scaled_dot_product_attention(q, q, q),
         "torch.nn.functional.scaled_dot_product_attention"),
        (lambda: aten.scaled_dot_product_attention(q, q, q),
         "torch.ops.aten.scaled_dot_product_attention"),
        (lambda: aten.scaled_dot_product_attention.default(q, q, q),
         "torch.ops.aten.scaled_dot_product_attention.default"),
        (lambda: aten._scaled_dot_product_attention_math(q, q, q),
         "torch.ops.aten._scaled_dot_product_attention_math"),
        (lambda: aten._scaled_dot_product_attention_math.default(q, q, q),
         "torch.ops.aten._scaled_dot_product_attention_math.default"),
        (lambda: torch._scaled_dot_product_attention_math(q, q, q),
         "torch._scaled_dot_product_attention_math"),
        (lambda: aten._scaled_dot_product_flash_attention_for_cpu(q, q, q),
         "torch.ops.aten._scaled_dot_product_flash_attention_for_cpu"),
        (lambda: F.multi_head_attention_forward(
            q[0, 0, :, None], q[0, 0, :, None], q[0, 0, :, None], 4, 1,
            torch.cat([eye] * 3), None, None, None, False, 0.0, eye, None,
            training=False), "torch.nn.functional.multi_head_attention_forward"),
        (lambda: mha(q[0, 0, :, None], q[0, 0, :, None], q[0, 0, :, None]),
         "torch.nn.functional.multi_head_attention_forward"),
    ]
    if "torch.nn.attention.flex_attention.flex_attention" in functions:
        from torch.nn.attention.flex_attention import flex_attention
        attempts.append((lambda: flex_attention(q, q, q),
                         "torch.nn.attention.flex_attention.flex_attention"))
    for attempt, name in attempts:
        watched = _refusing_the_library(attempt, functions, "refused {name}", builtins)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (flex_attention's, run without compile)
            with pytest.raises(Rejected, match=re.escape(f"refused {name}") + "$"):
                watched()
    # the words say what is refused
    for name in ("torch.nn.functional.scaled_dot_product_attention",
                 "torch.nn.functional.multi_head_attention_forward", "flex_attention",
                 "torch.ops.aten._scaled_dot_product_attention_math",
                 "torch._native_multi_head_attention", "_transformer_encoder_layer_fwd"):
        assert name in TORCH_ATTENTION_REFUSED, name
    # every aten operator whose name says attention, and each of its overloads
    for op in ("_efficient_attention_forward", "_flash_attention_forward",
               "_native_multi_head_attention", "_transformer_encoder_layer_fwd",
               "_scaled_dot_product_cudnn_attention"):
        packet = getattr(aten, op)
        for overload in ["", *packet.overloads()]:
            name = f"torch.ops.aten.{op}" + (f".{overload}" if overload else "")
            target = getattr(packet, overload)._op if overload else packet._op
            assert builtins[name][0] is target, name
    # torch's other operations, and attention of the reader's own in torch, pass
    own = _refusing_the_library(
        lambda: torch.softmax(q @ q.transpose(-2, -1) / 2, -1) @ q, functions,
        "refused {name}", builtins)
    assert own().shape == q.shape


def test_the_librarys_softmax_functions_are_listed_by_their_public_and_private_names():
    import attention
    from attention.checkers._engine import _library_softmax

    listed = _library_softmax()
    assert listed["attention.softmax"] is attention.softmax
    assert listed["attention.softmax_vjp"] is attention.softmax_vjp
    assert {"attention.softmax._softmax", "attention.naive_softmax",
            "attention.softmax_jacobian"} <= set(listed)
    if "torch" in __import__("sys").modules:
        assert "attention.torch.safe_softmax" in listed


def test_a_boolean_index_error_with_a_mask_is_told_the_mask_needs_the_full_shape():
    S, mask = np.zeros((3, 5)), np.ones(5, bool)
    with pytest.raises(IndexError) as caught:
        S[~np.ones(3, bool)[:, None].repeat(2, 1)] = 0  # a boolean index of another shape
    assert "needs a mask of the scores' full shape" in engine._boolean_index_hint(
        caught.value, mask)
    assert engine._boolean_index_hint(caught.value, None) == ""
    assert engine._boolean_index_hint(ValueError("boolean"), mask) == ""
