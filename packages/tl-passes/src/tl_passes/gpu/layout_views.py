"""Fragment views and annotated layouts: the parts of layout inference that read
``DeclBuffer`` views of fragments and ``T.annotate_layout`` maps."""

from __future__ import annotations

import math
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.ops import viewed_buffer
from tl_passes.gpu.layout_base import LayoutError, static_shape


def annotated_owners(buffer: Any, index_map: Any, num_threads: int) -> tuple[tuple[int, int], ...]:
    shape = static_shape(buffer)
    analyzer = tvm.sym.Analyzer() if hasattr(tvm, "sym") else None
    owners: list[tuple[int, int]] = []
    for flat in range(math.prod(shape)):
        index = []
        rest = flat
        for extent in reversed(shape):
            index.append(rest % extent)
            rest //= extent
        index.reverse()
        mapped = index_map.map_indices([tirx.IntImm("int32", i) for i in index])
        if len(mapped) != 2:
            raise LayoutError(
                f"T.annotate_layout for fragment {buffer.name}: expected a function returning "
                f"(thread, local_index), got {len(mapped)} outputs"
            )
        values = []
        for value in mapped:
            if analyzer is not None:
                value = analyzer.simplify(value)
            if not isinstance(value, tirx.IntImm):
                raise LayoutError(
                    f"T.annotate_layout for fragment {buffer.name}: the layout must give "
                    f"constants for constant indices, got {value}"
                )
            values.append(int(value))
        thread, local = values
        if not 0 <= thread < num_threads or local < 0:
            raise LayoutError(
                f"T.annotate_layout for fragment {buffer.name}: element {tuple(index)} maps to "
                f"thread {thread}, local {local}; expected 0 <= thread < {num_threads} and "
                "local >= 0"
            )
        owners.append((thread, local))
    if len(set(owners)) != len(owners):
        raise LayoutError(
            f"T.annotate_layout for fragment {buffer.name}: two elements map to the same "
            "(thread, local) slot"
        )
    return tuple(owners)


def fragment_views(body: Any, fragments: dict[str, Any]) -> dict[str, tuple[Any, str]]:
    """The views of fragments in ``body``: view name -> (view buffer, the fragment whose
    registers it shares), following views of views.

    Raises:
        LayoutError: a view changes the dtype, or has a symbolic shape.
    """
    views: dict[str, tuple[Any, str]] = {}

    def visit(decl: Any) -> None:
        source = viewed_buffer(decl)
        if source is None:
            return
        source_name = str(source.name)
        if source_name in views and source.same_as(views[source_name][0]):
            root = views[source_name][1]
        elif source_name in fragments and source.same_as(fragments[source_name]):
            root = source_name
        else:
            return
        buffer = decl.buffer
        name = str(buffer.name)
        if str(buffer.ty.dtype) != str(source.ty.dtype):
            raise LayoutError(
                f"fragment view {name}: expected the dtype of fragment {source_name} "
                f"({source.ty.dtype}) on GPU targets, got {buffer.ty.dtype}"
            )
        if name in fragments or name in views:
            raise LayoutError(f"two fragments are named {name!r}; expected unique names")
        static_shape(buffer)
        views[name] = (buffer, root)

    tvm_ffi.structural_walk(body, (tirx.DeclBuffer, visit), order="pre")
    return views
