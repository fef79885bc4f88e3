"""The dummy backend's device codegen: text renderings, no compiler."""

from __future__ import annotations

from tvm import IRModule
from tvm.target import Target

from tl_backend_api import DeviceBuildResult, KernelSources


def entry_symbol_of(mod: IRModule) -> str:
    """The name of the module's first function (sorted, so the choice is stable)."""
    names = sorted(str(gv.name_hint) for gv in mod.get_global_vars())
    if not names:
        raise ValueError("mod: expected an IRModule with at least one function, got none")
    return names[0]


class DummyDeviceCodegen:
    """Emits the module's TVMScript as the "source"; `build` packages it as bytes."""

    #: How many times `build` ran (tests prove the source-only path skips it).
    build_count = 0

    def emit_source(self, mod: IRModule, target: Target) -> KernelSources:
        """Render ``mod`` as text; runs no compiler."""
        entry = entry_symbol_of(mod)
        text = f"// dummy device code for target kind {target.kind.name}\n" + mod.script()
        return KernelSources(
            language="tvmscript", files={f"{entry}.tvmscript": text}, entry_symbol=entry
        )

    def build(self, mod: IRModule, target: Target) -> DeviceBuildResult:
        """Package the emitted text as the binary (compiled by the driver at load time)."""
        type(self).build_count += 1
        sources = self.emit_source(mod, target)
        binaries = {f"{name}.bin": text.encode() for name, text in sources.files.items()}
        return DeviceBuildResult(
            sources=sources, binaries=binaries, toolchain_versions={"dummy-packager": "1"}
        )
