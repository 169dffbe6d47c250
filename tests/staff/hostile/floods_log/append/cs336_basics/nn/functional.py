
# hostile sample: 100 MB of output at import
import sys as _sys

_line = "x" * 1023 + "\n"
for _ in range(100 * 1024):
    _sys.stdout.write(_line)
_sys.stdout.flush()
