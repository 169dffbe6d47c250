
# hostile sample: kernel memory in TCP socket buffers
import json as _json
import socket as _socket

_held, _error, _pairs = 0, None, []
try:
    _server = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    _server.bind(("127.0.0.1", 0))
    _server.listen(32)
    for _ in range(16):
        _client = _socket.create_connection(_server.getsockname())
        _pairs.append((_client, _server.accept()[0]))
        _client.setblocking(False)
        while True:
            try:
                _held += _client.send(b"x" * (1 << 20))
            except BlockingIOError:
                break
except OSError as _e:
    _error = _e.errno
raise ImportError("TCPHELD" + _json.dumps({"mb": _held >> 20, "errno": _error}) + "TCPHELD")
