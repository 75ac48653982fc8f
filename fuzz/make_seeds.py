#!/usr/bin/env python3
"""Regenerates fuzz/seeds/vcp_parse/ from the parser's test corpora.

A seed is one options byte (bit 0 --fuzzy, bit 1 --skip-fenced, bit 2 --keep-think, as the
fuzz target reads it) followed by a corpus reply. Every case of tests/corpus/vcp/ is written
with all options off (0x00) and all on (0x07), and, when its JSON names flags, with exactly
those; every case of tests/corpus/vcp-extra/ with its own flags.

Run from anywhere: python3 fuzz/make_seeds.py
"""
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "fuzz" / "seeds" / "vcp_parse"
BITS = {"--fuzzy": 1, "--skip-fenced": 2, "--keep-think": 4}


def flags_byte(case_json: pathlib.Path) -> int:
    flags = json.loads(case_json.read_text(encoding="utf-8")).get("flags", [])
    return sum(BITS[f] for f in flags)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.bin"):
        old.unlink()
    for corpus, variants in (("vcp", {0x00, 0x07}), ("vcp-extra", set())):
        for txt in sorted((ROOT / "tests" / "corpus" / corpus).glob("*.txt")):
            data = txt.read_bytes()
            for byte in sorted(variants | {flags_byte(txt.with_suffix(".json"))}):
                name = f"{corpus.replace('-', '_')}__{txt.stem}_opt{byte:02x}.bin"
                (OUT / name).write_bytes(bytes([byte]) + data)
    print(f"{len(list(OUT.glob('*.bin')))} seeds in {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
