"""The benches' JSON (bench/bench_json.py) and the results page drawn from it
(bench/results_page.py), on records made up here: no bench runs."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
import bench_json  # noqa: E402
import results_page  # noqa: E402

CPU = {
    "kind": "cpu", "name": "Test CPU", "cpuid": "cpu family 25, model 17, stepping 1",
    "isa_level": "x86-64-v4", "kernels_isa": "avx512vnni", "cores": 2, "threads": 2,
    "numpy": "numpy2.4-openblas0.3", "ggml": "ggml 0.21.0 (d99724f2)", "load_average": [0.4, 3.1],
}  # fmt: skip
CARD = {
    "kind": "gpu", "name": "Test Card", "target": "sm_90", "code_object": "k-sm_90.ptx",
    "driver": "580.1", "cuda_driver": 13000, "torch": "2.11", "repeats": 20,
}  # fmt: skip


def host_record(date="2026-12-07T03:00:00Z"):
    read = 20.0
    matvec = bench_json.case(
        "matvec_q8_0", "16384x32768", 0.030, variant="avx512vnni", nbytes=570_425_344,
        read_gbs=read, peers=[bench_json.peer("ggml", "ggml_mul_mat", 0.060, 570_425_344, read)],
    )  # fmt: skip
    gemm = bench_json.case(
        "prompt_gemm", "512x4096x4096", 0.25, peers=[bench_json.peer("numpy", "matmul", 0.24)]
    )
    record = bench_json.record(
        "host_kernels", "abc123", CPU, {"what": "DRAM read, 1 GiB", "gbs": read}, [matvec, gemm]
    )
    return record | {"date": date}


def card_record():
    read = 4000.0
    vllm = bench_json.peer("vllm", "topk_softmax", 5.3e-6, note="not timed in this run")
    cases = [
        bench_json.case(
            "topk", "256 of 256 x 524288", 2e-4, variant="wide", nbytes=536_870_912,
            read_gbs=read, same_bytes_read_share=0.97,
            peers=[bench_json.peer("torch", "torch.topk", 1.6e-3, 536_870_912, read)],
        ),
        bench_json.case("router_topk", "512x128 k=8", 4.9e-6, variant="fast", peers=[vllm]),
    ]  # fmt: skip
    extras = [{"name": "one launch (read kernel, 16 B)", "seconds": 3.6e-6}]
    read_what = {"what": "the read kernel over 4 GiB", "gbs": read}
    return bench_json.record("gpu_kernels", None, CARD, read_what, cases, extras)


def test_a_case_carries_its_rate_and_share_of_read():
    case = bench_json.case("topk", "256 of 524288", 0.001, nbytes=2_000_000, read_gbs=20.0)
    assert case["gbs"] == pytest.approx(2.0)
    assert case["share_of_read"] == pytest.approx(0.1)
    gemm = bench_json.case("prompt_gemm", "512x4096x4096", 0.25)
    assert gemm["gbs"] is None and gemm["share_of_read"] is None


def test_the_record_is_written_whole_as_json(tmp_path):
    record = host_record()
    bench_json.write(tmp_path / "host.json", record)
    assert json.loads((tmp_path / "host.json").read_text()) == record
    assert sorted(p.name for p in tmp_path.iterdir()) == ["host.json"]


def test_the_page_shows_the_latest_run_of_each_machine_with_its_plot(tmp_path):
    results, page = tmp_path / "results", tmp_path / "results.md"
    results.mkdir()
    bench_json.write(results / "old.json", host_record("2026-12-01T00:00:00Z"))
    bench_json.write(results / "new.json", host_record())
    bench_json.write(results / "card.json", card_record())
    (results / "gone.png").write_bytes(b"stale")

    assert results_page.main(["--results", str(results), "--page", str(page)]) == 0

    text = page.read_text()
    prose = " ".join(text.split())
    assert text.count("### Test CPU") == 1 and "2026-12-07 03:00:00 UTC" in prose
    assert "commit `abc123`" in text and "an unknown commit" in text
    assert "| `matvec_q8_0` | 16384x32768 | avx512vnni | 30.000 ms | 19.0 | 95% |" in text
    assert "60.000 ms (2.00x)" in text
    assert "5.3 us (1.08x)*" in text and "* not timed in this run." in text
    assert "| 97% |" in text  # a read of as many bytes
    assert "load average 0.4 at the start, 3.1 at the end (at or above the 2 cores" in prose
    assert "Pending" not in text
    pngs = sorted(p.name for p in results.glob("*.png"))
    assert len(pngs) == 2 and "gone.png" not in pngs
    for name in pngs:
        assert f"](results/{name})" in text
        assert (results / name).read_bytes().startswith(b"\x89PNG")


def test_without_a_card_the_page_says_the_cards_are_pending(tmp_path):
    bench_json.write(tmp_path / "host.json", host_record())
    assert results_page.main(["--results", str(tmp_path), "--page", str(tmp_path / "r.md")]) == 0
    assert "Pending: no card's figures yet" in (tmp_path / "r.md").read_text()
