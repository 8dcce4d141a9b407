from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parent
EXAMPLES = ROOT / "examples" / "campaign"
VAULT = HERE / "fixtures" / "vault"
SHARED = Path(os.environ.get("OKF_SHARED", ROOT.parent / "shared"))
CORPORA = SHARED / "corpora"

needs_corpora = pytest.mark.skipif(
    not CORPORA.is_dir(), reason=f"shared corpora not present at {CORPORA} (CI has them)"
)


def write_bundle(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write a small bundle: {relative path: text or bytes}."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root
