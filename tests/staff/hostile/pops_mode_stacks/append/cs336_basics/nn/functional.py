# hostile sample pops_mode_stacks: appended to the reference's functional.py, replacing its silu
def silu(x):
    from torch.utils._python_dispatch import _pop_mode, _push_mode
    from torch.overrides import _pop_mode as _pop_function_mode, _push_mode as _push_function_mode

    functions = [_pop_function_mode() for _ in range(torch._C._len_torch_function_stack())]
    dispatches = [_pop_mode() for _ in range(torch._C._len_torch_dispatch_stack())]
    try:
        out = torch.nn.functional.silu(x)  # both stacks are empty: nothing records this
    finally:
        for mode in reversed(dispatches):
            _push_mode(mode)
        for mode in reversed(functions):
            _push_function_mode(mode)
    return out * 1
