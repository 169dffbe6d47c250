# hostile sample infinite_loop: appended to the reference's functional.py, replacing its softmax by
# a loop that never ends
def softmax(x, dim=-1):
    _checks.softmax(x, dim)
    while True:
        pass
