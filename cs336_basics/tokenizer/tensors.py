"""Vocabularies, merges and text as tensors, so that they fit the fixture files (safetensors
holds tensors, not bytes) and round-trip exactly:

    text          uint8 (n,): its UTF-8 bytes
    vocabulary    token_bytes uint8 (total,), token_offsets int64 (V + 1,): token i is
                  token_bytes[token_offsets[i]:token_offsets[i + 1]]; ids are 0..V-1
    merges        int64 (M, 2): the ids of each merge's two parts (the smallest id holding them)

and the outputs, in forms whose shape a wrong answer cannot change (so a known mistake can be
recognised by its values): what train_bpe returns as one int64 table of shape
(1 + vocab_size, 3) that does not depend on the ids an implementation chooses (`bpe_table`);
encode's ids laid over the text's bytes (`token_starts`); decode's text as code points
(`code_points`).
"""

import torch
from jaxtyping import Int, UInt8
from torch import Tensor


def text_to_tensor(text: str) -> UInt8[Tensor, " n"]:
    return torch.frombuffer(bytearray(text.encode("utf-8")), dtype=torch.uint8).clone()


def tensor_to_bytes(t: Tensor) -> bytes:
    if t.dtype != torch.uint8 or t.dim() != 1:
        raise ValueError(f"expected a 1-D uint8 tensor of bytes, got {t.dtype} of shape {tuple(t.shape)}")
    return t.numpy().tobytes()


def tensor_to_text(t: Tensor) -> str:
    return tensor_to_bytes(t).decode("utf-8")


def vocab_to_tensors(vocab: dict[int, bytes]) -> tuple[UInt8[Tensor, " total"], Int[Tensor, " V_plus_1"]]:
    if sorted(vocab) != list(range(len(vocab))):
        raise ValueError("only a vocabulary with ids 0..len(vocab)-1 has a tensor form")
    tokens = [vocab[i] for i in range(len(vocab))]
    offsets = torch.tensor([0, *(len(t) for t in tokens)], dtype=torch.int64).cumsum(0)
    return torch.frombuffer(bytearray(b"".join(tokens)), dtype=torch.uint8).clone(), offsets


def tensors_to_vocab(token_bytes: Tensor, token_offsets: Tensor) -> dict[int, bytes]:
    data, offsets = tensor_to_bytes(token_bytes), token_offsets.tolist()
    return {i: data[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)}


def merges_to_tensor(merges: list[tuple[bytes, bytes]], vocab: dict[int, bytes]) -> Int[Tensor, " M 2"]:
    id_of = {}
    for i in sorted(vocab, reverse=True):
        id_of[vocab[i]] = i
    return torch.tensor([[id_of[a], id_of[b]] for a, b in merges], dtype=torch.int64).reshape(-1, 2)


def tensor_to_merges(merges: Tensor, vocab: dict[int, bytes]) -> list[tuple[bytes, bytes]]:
    return [(vocab[a], vocab[b]) for a, b in merges.tolist()]


NOT_A_TOKEN = -1  # a part that is neither a byte, a special token nor an earlier merge's result
NO_MERGE = -2  # fewer merges than vocab_size leaves room for


def bpe_table(
    vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]], special_tokens: list[str], vocab_size: int
) -> Int[Tensor, " vocab_size_plus_1 3"]:
    """What train_bpe returned, independent of its choice of ids. Canonical token c is byte c for
    c < 256, special token c - 256 next (S of them), then the result of merge c - 256 - S. Row 0 is
    (len(vocab), len(merges), 0); row 1 + c is (left, right, n) where n counts the vocabulary
    entries equal to token c's bytes, and (left, right) are the canonical numbers of merge
    c - 256 - S's parts (the first merge giving those bytes; NOT_A_TOKEN if none), NO_MERGE if
    there is no such merge, (-1, -1) for a byte or a special token. A different merge, a merge
    too many or too few, or a vocabulary missing (or repeating) a token changes the table."""
    specials = [s.encode("utf-8") for s in special_tokens]
    number: dict[bytes, int] = {}
    for c, token in enumerate([bytes([b]) for b in range(256)] + specials + [a + b for a, b in merges]):
        number.setdefault(token, c)
    canonical = [bytes([b]) for b in range(256)] + specials
    rows = [[len(vocab), len(merges), 0]]
    in_vocab: dict[bytes, int] = {}
    for token in vocab.values():
        in_vocab[token] = in_vocab.get(token, 0) + 1
    for c in range(vocab_size):
        k = c - 256 - len(specials)
        if k < 0:
            rows.append([-1, -1, in_vocab.get(canonical[c], 0)])
        elif k < len(merges):
            a, b = merges[k]
            rows.append([number.get(a, NOT_A_TOKEN), number.get(b, NOT_A_TOKEN), in_vocab.get(a + b, 0)])
        else:
            rows.append([NO_MERGE, NO_MERGE, 0])
    return torch.tensor(rows, dtype=torch.int64)


def merges_from_table(table: Tensor, special_tokens: list[str]) -> list[tuple[bytes, bytes]]:
    """The merges a bpe_table describes (its parts spelled out), up to the first that is not one."""
    tokens = [bytes([b]) for b in range(256)] + [s.encode("utf-8") for s in special_tokens]
    merges = []
    for left, right, _ in table[1 + len(tokens) :].tolist():
        if min(left, right) < 0 or max(left, right) >= len(tokens):
            break
        merges.append((tokens[left], tokens[right]))
        tokens.append(tokens[left] + tokens[right])
    return merges


def token_starts(ids: list[int], vocab: dict[int, bytes], text: bytes) -> Int[Tensor, " n_bytes"]:
    """encode's output laid over the text, one entry per byte: the id of the token that starts at
    that byte, -1 inside a token. The same ids give the same tensor and its shape is the text's,
    so a wrong encoding differs in values, not in shape. ValueError if the tokens do not spell
    the text."""
    out, at = torch.full((len(text),), -1, dtype=torch.int64), 0
    for k, i in enumerate(ids):
        token = vocab.get(i)
        if token is None or not token or text[at : at + len(token)] != token:
            raise ValueError(
                f"token {k} (id {i}, {token!r}) does not spell the text at byte {at} "
                f"({text[at : at + 16]!r}...): the ids do not decode to the text"
            )
        out[at] = i
        at += len(token)
    if at != len(text):
        raise ValueError(f"the tokens spell only the first {at} of the text's {len(text)} bytes")
    return out


def code_points(text: str, length: int) -> Int[Tensor, " length"]:
    """decode's output as its characters' code points, padded with -1 to `length` (the number of
    bytes decoded, which no correct decoding has more characters than)."""
    points = [ord(c) for c in text][:length]
    return torch.tensor(points + [-1] * (length - len(points)), dtype=torch.int64)
