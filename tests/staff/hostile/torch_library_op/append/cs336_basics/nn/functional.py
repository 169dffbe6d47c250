# hostile sample torch_library_op: appended to the reference's functional.py, replacing its silu
@torch.library.custom_op("hostile::activation", mutates_args=())
def _activation(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.silu(x)  # runs below the dispatcher, inside the custom op's kernel


def silu(x):
    return _activation(x) * 1
