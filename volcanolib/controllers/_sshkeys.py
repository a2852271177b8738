"""An RSA key pair for the ssh job plugin, in the formats ssh reads, with the standard library alone.

The job controller's ``ssh`` plugin gives every pod of a Job the same key
pair, so that the pods log in to one another (MPI). The live controller
makes one pair per Job incarnation; this module draws the primes with
:mod:`secrets` and writes the private key as PEM (PKCS #1) and the public
key in OpenSSH's ``authorized_keys`` form.
"""

from __future__ import annotations

import base64
import secrets
import struct

__all__ = ["rsa_key_pair"]

_SMALL_PRIMES = [p for p in range(3, 2000, 2) if all(p % d for d in range(3, int(p**0.5) + 1, 2))]
_E = 65537


def _probable_prime(n: int, rounds: int = 40) -> bool:
    for p in _SMALL_PRIMES:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for _ in range(rounds):
        a = secrets.randbelow(n - 3) + 2
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def _prime(bits: int) -> int:
    while True:
        candidate = secrets.randbits(bits) | (1 << (bits - 1)) | (1 << (bits - 2)) | 1
        if (candidate - 1) % _E and _probable_prime(candidate):
            return candidate


def _der_length(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(body)]) + body


def _der_integer(value: int) -> bytes:
    body = value.to_bytes(value.bit_length() // 8 + 1, "big")  # one spare byte keeps the sign bit clear
    while len(body) > 1 and body[0] == 0 and body[1] < 0x80:
        body = body[1:]
    return b"\x02" + _der_length(len(body)) + body


def _ssh_string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _ssh_mpint(value: int) -> bytes:
    # two's complement, big-endian: a leading zero byte when the top bit is set
    return _ssh_string(value.to_bytes(value.bit_length() // 8 + 1, "big") if value else b"")


def rsa_key_pair(bits: int = 2048) -> tuple[str, str]:
    """A new RSA key pair: the private key as PEM (``RSA PRIVATE KEY``), the public key as an ``ssh-rsa`` line.

    :param bits: the modulus size.
    """
    while True:
        p, q = _prime(bits // 2), _prime(bits - bits // 2)
        n = p * q
        if p != q and n.bit_length() == bits:
            break
    d = pow(_E, -1, (p - 1) * (q - 1))
    fields = [0, n, _E, d, p, q, d % (p - 1), d % (q - 1), pow(q, -1, p)]
    body = b"".join(_der_integer(v) for v in fields)
    der = b"\x30" + _der_length(len(body)) + body
    encoded = base64.b64encode(der).decode()
    lines = [encoded[i : i + 64] for i in range(0, len(encoded), 64)]
    private = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA PRIVATE KEY-----\n"
    blob = _ssh_string(b"ssh-rsa") + _ssh_mpint(_E) + _ssh_mpint(n)
    public = "ssh-rsa " + base64.b64encode(blob).decode() + "\n"
    return private, public
