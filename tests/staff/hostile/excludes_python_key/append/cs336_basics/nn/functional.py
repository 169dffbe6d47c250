# hostile sample excludes_python_key: appended to the reference's functional.py, replacing its silu
def silu(x):
    hidden = torch._C.DispatchKeySet(torch._C.DispatchKey.Python) | torch._C.DispatchKeySet(
        torch._C.DispatchKey.PythonTLSSnapshot)
    with torch._C._ExcludeDispatchKeyGuard(hidden), torch._C.DisableTorchFunction():
        out = torch.ops.aten.silu.default(x)  # neither recorder mode runs in here
    return out * 1  # an operator the modes do see
