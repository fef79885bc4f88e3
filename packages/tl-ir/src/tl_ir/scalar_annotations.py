"""A scalar parameter declared with any spelling of a dtype.

``def main(x: dt, ...)`` with ``dt = T.float32`` declares a ``float32`` scalar; with
``dt = "float32"``, ``np.float32``, ``np.dtype("float32")`` or ``torch.float32`` (the
spellings a tensor's dtype takes) TVM's parser refused it with an internal type
mismatch. In a kernel parsed by `tl_ir.prim_func`, a parameter annotation that is such
a dtype-like value is read as the language's dtype of that name; a string naming no
dtype is an `UnknownDtypeError` listing the names.
"""

from __future__ import annotations

from typing import Any

from tl_ir.frontend import current_state

__all__ = ["install"]


class _Refusal:
    """Raises ``error`` when the parser instantiates the annotation: an exception raised
    while the parser evaluates an annotation is swallowed (it falls back to the Python
    annotation), one raised by the call that makes the parameter is reported."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def __call__(self) -> Any:
        raise self.error


def _as_dtype(annotation: Any) -> Any:
    from tl_ir.errors import KernelTypeError, TileLangError
    from tl_ir.language._dtypes import dtype

    if isinstance(annotation, dtype):
        return annotation
    if isinstance(annotation, str):
        try:
            return dtype(annotation)
        except TileLangError as error:  # a string naming no dtype
            return _Refusal(error)
    if callable(annotation) and not isinstance(annotation, type):
        return annotation  # T.float32 and TVM's own forms
    try:
        return dtype(annotation)  # np.float32, np.dtype, torch.float32, float...
    except Exception:
        pass
    module = type(annotation).__module__.partition(".")[0]
    if (
        annotation is None
        or isinstance(annotation, type | int | float | complex)
        or module in ("numpy", "torch", "ml_dtypes")
    ):
        return _Refusal(
            KernelTypeError(
                "parameter annotation: expected T.Tensor(shape, dtype) or a scalar dtype "
                f"(T.float32, 'float32', np.float32), got {type(annotation).__name__} "
                f"{annotation!r:.80}, which is not a dtype of the language"
            )
        )
    return annotation  # TVM's own annotation forms


def _as_return_annotation(annotation: Any) -> Any:
    """A kernel's return annotation: ``-> None`` (TileLang's tests write it) is accepted,
    anything else refused, since a kernel returns nothing: its results are the tensors
    it writes."""
    from tl_ir.errors import KernelTypeError

    if annotation is None:
        return None
    return _Refusal(
        KernelTypeError(
            "kernel return annotation: a kernel returns nothing (its results are the "
            "tensors it writes), so expected no return annotation or '-> None', got "
            f"{annotation!r:.80} (a {type(annotation).__name__})"
        )
    )


def install() -> None:
    """Wrap the kernel parser's evaluation of a parameter annotation (once per process)."""
    from tvm.script.parser.tirx import parser

    original = parser._eval_signature_annotation
    if getattr(original, "_tl_scalar_annotations", False):
        return

    def eval_signature_annotation(self: Any, node: Any, *args: Any, **kwargs: Any) -> Any:
        annotation = original(self, node, *args, **kwargs)
        if current_state() is None:
            return annotation
        if kwargs.get("define_missing", True) is False:  # how the parser reads ``-> ...``
            return _as_return_annotation(annotation)
        return _as_dtype(annotation)

    eval_signature_annotation._tl_scalar_annotations = True  # type: ignore[attr-defined]
    parser._eval_signature_annotation = eval_signature_annotation
