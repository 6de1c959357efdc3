"""Stream ordering: imports wait for the producer's stream, exports make the consumer's
stream wait; the values __dlpack__(stream=...) accepts and refuses."""

import numpy as np
import pytest
import torch

import dlbridge as db
from .conftest import assert_values, cuda_from, rand_array


NO_DEVICE_SYNC = "torch's current stream is not the legacy default stream"
SLEEP_CYCLES = 200_000_000  # ~0.1 s of GPU time at ~2 GHz


@pytest.fixture
def legacy_default(tcuda):
    """torch's current stream is the legacy default stream (dlbridge's own stream)."""
    if torch.cuda.current_stream().cuda_stream != 0:
        pytest.skip(NO_DEVICE_SYNC)
    return torch


def test_import_waits_for_the_producers_stream(legacy_default):
    """torch writes on a busy non-default stream; dlbridge imports while that stream is
    current (torch makes the legacy stream, which dlbridge names, wait) and reads 5s."""
    x = torch.zeros(1 << 22, device="cuda")
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(SLEEP_CYCLES)
        x.fill_(5.0)
        d = db.from_dlpack(x)
    host = d.cpu().numpy()
    assert (host == 5.0).all(), f"read {np.unique(host)[:5]} before the producer's stream finished"
    torch.cuda.synchronize()


@pytest.mark.parametrize("how", ["torch.from_dlpack(d)", "capsule(stream=s)"])
def test_export_makes_the_consumers_stream_wait(how, legacy_default):
    """dlbridge writes (queued behind a sleep on the legacy stream); torch consumes on its own
    non-blocking stream s and must see the write: dlbridge makes s wait on an event."""
    d = db.zeros(1 << 22, device="cuda")
    db.cuda.synchronize()
    s = torch.cuda.Stream()
    torch.cuda._sleep(SLEEP_CYCLES)  # torch's current stream is the legacy default stream
    d.fill_(7.0)
    with torch.cuda.stream(s):
        if how == "torch.from_dlpack(d)":
            y = torch.from_dlpack(d)  # torch passes s.cuda_stream
        else:
            y = torch.from_dlpack(d.__dlpack__(stream=s.cuda_stream, max_version=(1, 0)))
        out = y.clone()  # read on s
        host = out.cpu()  # copies on s and waits for s only
    assert (host == 7.0).all(), f"read {host.unique()[:5].tolist()} before dlbridge's write"
    torch.cuda.synchronize()


def test_export_to_cupy_on_a_non_blocking_stream_waits(cp):
    spin = cp.RawKernel(r'''
    extern "C" __global__ void spin(long long cycles) {
        long long start = clock64();
        while (clock64() - start < cycles) { }
    }''', "spin")
    d = db.zeros(1 << 22, device="cuda")
    db.cuda.synchronize()
    spin((1,), (1,), (np.int64(SLEEP_CYCLES),), stream=cp.cuda.Stream.null)  # the legacy stream
    d.fill_(7.0)
    with cp.cuda.Stream(non_blocking=True) as cs:
        c = cp.from_dlpack(d)
        out = c.copy()
        host = cp.asnumpy(out, stream=cs)
        cs.synchronize()
    assert (host == 7.0).all()


@pytest.mark.parametrize("stream", ["None", "1", "2", "-1", "torch_stream"])
def test_dlpack_stream_values_accepted(stream, rng):
    if stream == "torch_stream":
        if not torch.cuda.is_available():
            pytest.skip("torch has no CUDA")
        ts = torch.cuda.Stream()  # kept alive for the test
        value = ts.cuda_stream
    else:
        value = None if stream == "None" else int(stream)
    a = rand_array(rng, "float32", (9,))
    t = cuda_from(a)
    for mv in (None, (1, 0)):
        c = t.__dlpack__(stream=value, max_version=mv)
        d = db.from_dlpack(c)
        assert d.data_ptr() == t.data_ptr()
        db.cuda.synchronize()
        assert_values(d, a)


@pytest.mark.parametrize("stream", [0, -2, -7])
def test_dlpack_stream_values_rejected(stream):
    t = db.zeros(3, device="cuda")
    with pytest.raises(ValueError):
        t.__dlpack__(stream=stream)
    with pytest.raises(ValueError):
        t.__dlpack__(stream=stream, max_version=(1, 0))


@pytest.mark.parametrize("stream", [1, 2, -1])
def test_cpu_tensor_rejects_a_stream(stream):
    with pytest.raises(ValueError):
        db.zeros(3).__dlpack__(stream=stream)
