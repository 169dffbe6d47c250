# hostile sample thread_offload: appended to the reference's functional.py, replacing its silu
def silu(x):
    import threading

    box = []
    worker = threading.Thread(target=lambda: box.append(torch.nn.functional.silu(x)))
    worker.start()
    worker.join()  # joined before returning: no extra thread is alive when the kernel returns
    return box[0] * 1
