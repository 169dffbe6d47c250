# hostile sample forked_child: appended to the reference's functional.py, replacing its silu
def silu(x):
    import io
    import os

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the recorder's modes are not in this process's story
        buffer = io.BytesIO()
        torch.save(torch.nn.functional.silu(x), buffer)
        os.write(write, buffer.getvalue())
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.waitpid(pid, 0)
    return torch.load(io.BytesIO(b"".join(chunks))) * 1
