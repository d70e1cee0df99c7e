"""Every rank file of a checkpoint opens with a safetensors reader written here from the public
format description alone (huggingface/safetensors, "Format": an 8-byte little-endian u64 N, N
bytes of JSON mapping tensor names to dtype, shape and data_offsets into the bytes after the
header, and an optional "__metadata__" map of strings to strings). The reader knows nothing of
muonplan; the test then checks each shard's values against muonplan.read_checkpoint, placed
where the file's metadata says (docs/checkpoint-format.md). ctest sets PYTHONPATH, MUONPLAN_BIN,
MUONPLAN_SOURCE_DIR and MPIEXEC."""
import json
import os
import struct
import tempfile
import unittest

import numpy as np

import muonplan

from testenv import BIN, ROOT, mpiexec


# --- the reader: the format description, nothing else -----------------------------------------

DTYPES = {"F32": np.dtype("<f4"), "I64": np.dtype("<i8"), "BF16": np.dtype("<u2")}


def read_safetensors(path):
    """{name: numpy array}, {name: dtype}, metadata. BF16 comes back as float32 (its 16 bits
    are the high half of a float32's)."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    assert 8 + n <= len(blob), "header runs past the end"
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = blob[8 + n:]
    metadata = header.pop("__metadata__", {})
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    tensors, dtypes, spans = {}, {}, []
    for name, info in header.items():
        assert set(info) == {"dtype", "shape", "data_offsets"}, name
        dtype = DTYPES[info["dtype"]]
        begin, end = info["data_offsets"]
        count = int(np.prod(info["shape"], dtype=np.int64))
        assert end - begin == count * dtype.itemsize, name
        a = np.frombuffer(data, dtype=dtype, count=count, offset=begin).reshape(info["shape"])
        if info["dtype"] == "BF16":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        tensors[name] = a
        dtypes[name] = info["dtype"]
        spans.append((begin, end))
    # The data is covered exactly: no gaps, no overlaps.
    at = 0
    for begin, end in sorted(spans):
        assert begin == at, "gap or overlap in the data"
        at = end
    assert at == len(data), "bytes after the last tensor"
    return tensors, dtypes, metadata


# --- the checks --------------------------------------------------------------------------------

class RankFilesOpen(unittest.TestCase):
    def test_every_rank_file(self):
        with tempfile.TemporaryDirectory() as work:
            # 4 ranks, fsdp=2,ep=2: rows split in two (and replicated twice), experts over
            # all four; bf16 momentum for BF16 entries.
            plan = muonplan.plan(os.path.join(ROOT, "models/tiny-moe.yaml"),
                                 os.path.join(ROOT, "topologies/cpu-ci.yaml"), nodes=1,
                                 gpus_per_node=4, offload="none", layout="fsdp=2,ep=2",
                                 bf16_momentum=True)
            plan_path = os.path.join(work, "p.json")
            with open(plan_path, "w") as f:
                json.dump(plan, f)
            ck = os.path.join(work, "ck")
            r = mpiexec(4, BIN, "execute", "--plan", plan_path, "--steps", "2", "--checkpoint", ck)
            self.assertEqual(r.returncode, 0, r.stderr)
            whole = muonplan.read_checkpoint(ck)["tensors"]
            with open(os.path.join(ck, "manifest.json")) as f:
                manifest = json.load(f)
            shapes = {t["name"]: t["shape"] for t in plan["tensors"]}
            stacks = {t["name"] for t in plan["tensors"] if t["stack_dim"] == 0}
            covered = {name: np.zeros(shapes[name.rsplit("/", 1)[0]][0], dtype=int)
                       for name in whole}
            dtypes = set()
            self.assertEqual(len(manifest["ranks"]), 4)
            for rank, entry in enumerate(manifest["ranks"]):
                path = os.path.join(ck, entry["file"])
                self.assertEqual(os.path.getsize(path), entry["bytes"])
                tensors, file_dtypes, meta = read_safetensors(path)
                self.assertEqual(file_dtypes.pop("step"), "I64")
                self.assertEqual(meta["step"], "2")
                self.assertEqual(meta["rank"], str(rank))
                self.assertEqual(meta["world_size"], "4")
                self.assertEqual(int(tensors.pop("step")), 2)
                for name, shard in tensors.items():
                    dtypes.add(file_dtypes[name])
                    tensor = name.rsplit("/", 1)[0]
                    key = tensor + ("/experts" if tensor in stacks else "/rows")
                    begin, end = json.loads(meta[key])
                    self.assertEqual(json.loads(meta[tensor + "/shape"]), shapes[tensor])
                    self.assertEqual(list(shard.shape), [end - begin] + shapes[tensor][1:])
                    self.assertTrue(np.array_equal(shard, whole[name][begin:end]), name)
                    covered[name][begin:end] += 1
            # Every row of every entry is in exactly one file (replicas are stored once).
            for name, c in covered.items():
                self.assertTrue(np.all(c == 1), f"{name}: rows stored {sorted(set(c))} times")
            # Muon momentum is BF16 under --bf16-momentum; everything else F32.
            self.assertEqual(dtypes, {"F32", "BF16"})
            self.assertTrue(stacks)


if __name__ == "__main__":
    unittest.main()
