"""Ed25519 certificate signatures (`phantom_assets.audit.signing`): a signature verifies with its
signer's public key only, and only over the bytes it was made on."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from phantom_assets.audit.signing import (
    Signature,
    new_key_pair,
    sign_certificate,
    signature_problem,
)

REPORT, MARKDOWN = b'{"certified": false}\n', b"**Verdict: NOT CERTIFIED**\n"


@pytest.fixture(scope="module")
def keys():
    return new_key_pair(), new_key_pair()


def test_a_signature_verifies_with_the_signers_key_after_a_round_trip(keys):
    (private, public), _ = keys
    signature = Signature.from_json(sign_certificate(private, REPORT, MARKDOWN).to_json())
    assert signature_problem(public, signature, REPORT, MARKDOWN) is None
    assert signature.public_key.encode() == public


def test_another_key_or_other_bytes_fail_and_say_which(keys):
    (private, _), (_, other_public) = keys
    signature = sign_certificate(private, REPORT, MARKDOWN)
    assert "not made by this key" in signature_problem(other_public, signature, REPORT, MARKDOWN)
    edited = REPORT.replace(b"false", b"true")
    assert "other report.json" in signature_problem(keys[0][1], signature, edited, MARKDOWN)


def test_a_signature_whose_payload_was_rewritten_does_not_verify(keys):
    """Rewriting the recorded payload to match edited files does not help a forger."""
    (private, public), _ = keys
    signature = sign_certificate(private, REPORT, MARKDOWN)
    edited = REPORT.replace(b"false", b"true")
    recorded_digest = signature.payload.split("\n")[1]
    payload = signature.payload.replace(recorded_digest, hashlib.sha256(edited).hexdigest())
    forged = Signature(signature.public_key, signature.signature, payload)
    assert "not made by this key" in signature_problem(public, forged, edited, MARKDOWN)


def test_a_file_that_is_not_a_signature_is_refused():
    with pytest.raises(ValueError, match="not a"):
        Signature.from_json('{"format": "something else"}')


def test_phantom_certify_new_key_writes_a_private_key_only_its_owner_reads(tmp_path):
    from orchestration.cli import main

    key = tmp_path / "certifier.pem"
    assert main(["certify", "--new-key", str(key)]) == 0
    assert key.stat().st_mode & 0o077 == 0  # not readable by group or others
    signature = sign_certificate(key.read_bytes(), REPORT, MARKDOWN)
    assert signature_problem(Path(f"{key}.pub").read_bytes(), signature, REPORT, MARKDOWN) is None
    assert main(["certify", "--new-key", str(key)]) == 2  # never overwrites a key
