"""Which cluster `RayExecutor` connects to when Ray is not initialized (a stub Ray records
the ``ray.init`` call): None is ``$RAY_ADDRESS`` when set, else a new local cluster, never
the cluster another process last started on this machine (which plain ``ray.init()``
joins, refusing ``num_cpus`` there: the CI failure of two Ray tests run side by side)."""

from __future__ import annotations

from typing import Any

import pytest

from tl_jit import distributed


class _StubRay:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def is_initialized(self) -> bool:
        return False

    def init(self, **kwargs: Any) -> None:
        self.calls.append(kwargs)

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": 2.0}


@pytest.mark.parametrize(
    ("address", "environment", "expected"),
    [
        (None, None, "local"),
        (None, "ray://head:10001", "ray://head:10001"),
        ("auto", "ray://head:10001", "auto"),
        ("10.0.0.1:6379", None, "10.0.0.1:6379"),
    ],
)
def test_the_address_ray_init_is_given(
    monkeypatch: pytest.MonkeyPatch, address: str | None, environment: str | None, expected: str
) -> None:
    stub = _StubRay()
    monkeypatch.setattr(distributed, "_import_ray", lambda: stub)
    if environment is None:
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
    else:
        monkeypatch.setenv("RAY_ADDRESS", environment)
    distributed.RayExecutor(address=address, init_options={"num_cpus": 2})
    assert stub.calls == [{"address": expected, "num_cpus": 2}]
