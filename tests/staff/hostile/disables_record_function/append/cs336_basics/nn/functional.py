# hostile sample disables_record_function: appended to the reference's functional.py, replacing its silu
def silu(x):
    hidden = torch._C.DispatchKeySet(torch._C.DispatchKey.Python) | torch._C.DispatchKeySet(
        torch._C.DispatchKey.PythonTLSSnapshot)
    torch._C._autograd._enable_record_function(False)  # the profiler's callbacks off too
    try:
        with torch._C._ExcludeDispatchKeyGuard(hidden), torch._C.DisableTorchFunction():
            out = torch.ops.aten.silu.default(x)
    finally:
        torch._C._autograd._enable_record_function(True)  # back on before the recorder looks
    return out * 1
