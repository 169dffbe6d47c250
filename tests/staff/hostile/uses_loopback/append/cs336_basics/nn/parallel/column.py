# hostile sample uses_loopback: appended to the reference's column.py. The tensor-parallel ranks (in
# a gloo group on 127.0.0.1) try addresses that are not loopback, and raise with what they saw
# between REACHES markers
def _forward(self, x):
    import json, socket
    import torch.distributed as dist

    seen = {"group": dist.get_world_size()}
    for address in ("1.1.1.1", "10.0.0.1", "192.168.1.1"):
        try:
            socket.create_connection((address, 80), timeout=2).close()
            seen[address] = "connected"
        except OSError as e:
            seen[address] = str(e)
    raise RuntimeError("REACHES" + json.dumps(seen) + "REACHES")


ColumnParallelLinear.forward = _forward
