"""``wirestream capture stats`` counts natively what the pure-Python path counts.

Where the extension decodes the protocol, ``stats`` counts every record as the frame log
decodes it (``wirestream.runtime.capture.native.count_records``): no Python object per
frame. Here both paths count the same captures -- the cross-language corpus of every
version decoded natively (golden, error, differential and mutated frames: many do not
decode, so MALFORMED is counted too), as capture files and as a pcapng -- and must give
the same JSON, key order included; a corrupt file fails both alike.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.native.test_native_capture import NATIVE, PCAP_PORT, corpus_of, record
from wirestream.apps.cli import main
from wirestream.runtime.capture import native
from wirestream.runtime.capture.format import RECORD_HEADER_SIZE
from wirestream.runtime.capture.pcap import write_pcapng


def stats(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["capture", "stats", *argv, "--format", "json"])
    out, err = capsys.readouterr()
    return code, out, err


def both_paths(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *argv: str
) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    """``stats`` natively, then with ``WIRESTREAM_NATIVE=0`` (the pure-Python path)."""
    natively = stats(capsys, *argv)
    with monkeypatch.context() as env:
        env.setenv(native.ENV, "0")
        purely = stats(capsys, *argv)
    return natively, purely


def corpus_capture(folder: Path, name: str, max_file_bytes: int | None = None) -> list[Path]:
    """The corpus of ``name`` recorded in ``folder``, each frame with its sender's flags."""
    cases = corpus_of(name)
    return record(folder / "corpus.wscap", [data for _, data, _ in cases], name=name,
                  senders=[sender for _, _, sender in cases],
                  max_file_bytes=max_file_bytes)  # fmt: skip


@pytest.mark.parametrize("name", NATIVE)
def test_stats_of_every_native_versions_corpus_are_the_pure_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    name: str,
) -> None:  # fmt: skip
    cases = corpus_of(name)
    # two rotated files: the counts run on across files (connections, first and last)
    files = corpus_capture(tmp_path, name, max_file_bytes=RECORD_HEADER_SIZE * len(cases))
    assert len(files) > 1
    natively, purely = both_paths(capsys, monkeypatch, str(tmp_path / "corpus.wscap"))
    assert natively == purely
    counted = json.loads(natively[1])
    assert counted["frames"] == len(cases)
    assert 0 < counted["malformed"] < len(cases)  # both kinds of frame were counted
    assert natively[0] == 1  # a frame that did not decode: exit 1, on both paths


@pytest.mark.parametrize("name", NATIVE)
def test_stats_of_every_native_versions_pcap_are_the_pure_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    name: str,
) -> None:  # fmt: skip
    (capture,) = corpus_capture(tmp_path, name)
    pcapng = tmp_path / "corpus.pcapng"
    write_pcapng(capture, pcapng, server_port=PCAP_PORT)
    natively, purely = both_paths(capsys, monkeypatch, str(pcapng), "--protocol", name,
                                  "--port", str(PCAP_PORT))  # fmt: skip
    assert natively == purely
    assert json.loads(natively[1])["pcap"]["packets"] > 0


def test_stats_of_a_clean_capture_exit_0_on_both_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    golden = [data for kind, data, _ in corpus_of("rsocket/1.0") if kind == "golden"]
    record(tmp_path / "golden.wscap", golden)
    natively, purely = both_paths(capsys, monkeypatch, str(tmp_path / "golden.wscap"))
    assert natively == purely
    assert natively[0] == 0 and json.loads(natively[1])["malformed"] == 0


def test_a_corrupt_capture_fails_stats_alike_on_both_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    golden = [data for kind, data, _ in corpus_of("rsocket/1.0") if kind == "golden"]
    (path,) = record(tmp_path / "bad.wscap", golden)
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # the last frame's bytes: its frame CRC no longer matches
    path.write_bytes(bytes(data))
    natively, purely = both_paths(capsys, monkeypatch, str(path))
    assert natively == purely
    code, out, err = natively
    assert code == 1 and out == "" and "CRC" in err


def test_native_counts_are_used_where_the_extension_decodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The native path is the one taken (a broken counter fails the command), and
    ``WIRESTREAM_NATIVE=0`` leaves it alone."""
    golden = [data for kind, data, _ in corpus_of("rsocket/1.0") if kind == "golden"]
    record(tmp_path / "golden.wscap", golden)

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("counted natively")

    monkeypatch.setattr(native, "count_records", broken)
    with pytest.raises(RuntimeError, match="counted natively"):
        stats(capsys, str(tmp_path / "golden.wscap"))
    monkeypatch.setenv(native.ENV, "0")
    assert stats(capsys, str(tmp_path / "golden.wscap"))[0] == 0
