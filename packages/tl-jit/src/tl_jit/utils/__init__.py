"""TileLang's ``tilelang.utils`` names that kernel programs import: `TensorSupplyType`,
`get_tensor_supply` and `torch_assert_close` (in `tl_jit.utils.tensor`)."""

from tl_jit.utils.tensor import TensorSupplyType, get_tensor_supply, torch_assert_close

__all__ = ["TensorSupplyType", "get_tensor_supply", "torch_assert_close"]
