"""Ed25519 signatures of a certificate (`phantom certify --sign`, `phantom audit --verify`;
docs/architecture.md#audit-and-tamper-evidence).

The signature covers the SHA-256 of `report.json` and of `report.md`, so a third party holding the
public key can check who certified what. `cryptography` is imported only here (the `signing`
extra); the private key is read from its file by the caller and never stored or logged.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

SIGNATURE_FORMAT = "phantom-certificate-ed25519-v1"


class SigningUnavailable(RuntimeError):
    """`cryptography` is not installed."""


def _primitives() -> Any:
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError as error:  # the optional extra
        raise SigningUnavailable(
            "signing needs the `signing` extra: .venv/bin/pip install -c requirements.lock "
            "-e '.[signing]'"
        ) from error
    return serialization, ed25519


def signed_payload(report_json: bytes, report_md: bytes) -> bytes:
    """What is signed: the format name and both files' SHA-256, one per line."""
    digests = (hashlib.sha256(report_json).hexdigest(), hashlib.sha256(report_md).hexdigest())
    return "\n".join((SIGNATURE_FORMAT, *digests)).encode() + b"\n"


def new_key_pair() -> tuple[bytes, bytes]:
    """A fresh Ed25519 key pair as (private PKCS#8 PEM, public SubjectPublicKeyInfo PEM)."""
    serialization, ed25519 = _primitives()
    private = ed25519.Ed25519PrivateKey.generate()
    private_pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return private_pem, public_pem_of(private_pem)


def public_pem_of(private_pem: bytes) -> bytes:
    """The public key (PEM) of a private key (PEM)."""
    serialization, ed25519 = _primitives()
    private = serialization.load_pem_private_key(private_pem, password=None)
    if not isinstance(private, ed25519.Ed25519PrivateKey):
        raise ValueError("the private key is not an Ed25519 key")
    public = private.public_key()
    return public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


@dataclass(frozen=True)
class Signature:
    """A certificate's signature file (`report.sig`, JSON)."""

    public_key: str  # PEM of the signer's public key
    signature: str  # hex
    payload: str  # what was signed (`signed_payload`), for people to read

    def to_json(self) -> str:
        doc = {
            "format": SIGNATURE_FORMAT,
            "public_key": self.public_key,
            "signature": self.signature,
            "payload": self.payload,
        }
        return json.dumps(doc, sort_keys=True, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Signature:
        """Raises ValueError for a file that is not a signature of this format."""
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"not a signature file: {error}") from error
        if not isinstance(doc, dict) or doc.get("format") != SIGNATURE_FORMAT:
            raise ValueError(f"not a {SIGNATURE_FORMAT} signature")
        return cls(str(doc["public_key"]), str(doc["signature"]), str(doc["payload"]))


def sign_certificate(private_pem: bytes, report_json: bytes, report_md: bytes) -> Signature:
    """Sign both certificate files with an Ed25519 private key (PEM).

    Raises:
        ValueError: the key is not an unencrypted Ed25519 private key.
    """
    serialization, ed25519 = _primitives()
    private = serialization.load_pem_private_key(private_pem, password=None)
    if not isinstance(private, ed25519.Ed25519PrivateKey):
        raise ValueError("the private key is not an Ed25519 key")
    payload = signed_payload(report_json, report_md)
    public_pem = public_pem_of(private_pem).decode()
    return Signature(public_pem, private.sign(payload).hex(), payload.decode())


def signature_problem(
    public_pem: bytes, signature: Signature, report_json: bytes, report_md: bytes
) -> str | None:
    """None if `signature` is the holder of `public_pem`'s over these files, else why not."""
    serialization, ed25519 = _primitives()
    from cryptography.exceptions import InvalidSignature

    public = serialization.load_pem_public_key(public_pem)
    if not isinstance(public, ed25519.Ed25519PublicKey):
        return "the public key is not an Ed25519 key"
    payload = signed_payload(report_json, report_md)
    if signature.payload.encode() != payload:
        return "the signature was made over other report.json / report.md bytes"
    try:
        public.verify(bytes.fromhex(signature.signature), payload)
    except (InvalidSignature, ValueError):
        return "the signature was not made by this key"
    return None
