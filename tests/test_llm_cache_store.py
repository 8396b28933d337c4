"""The response cache store: JSONL record of truth, sqlite index, several writing processes,
migration of existing folders, export/import byte for byte, the batch log."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import warnings
from pathlib import Path

import pytest

from mechaudit.cli import main as cli_main
from mechaudit.llm import LLMRequest
from mechaudit.llm.cache import (
    INDEX_FILENAME,
    BatchState,
    CacheRecoveryWarning,
    ResponseCache,
    system_sha256,
)

RUBRIC = "Decide whether the two hypotheses name the same mechanism. " * 20


def req(i: int | str, system: str = RUBRIC) -> LLMRequest:
    return LLMRequest(model="claude-opus-4-6", system=system, version="v1", max_tokens=64,
                      messages=[{"role": "user", "content": f"pair {i}"}])


def answer(text: str) -> dict:
    return {"text": text, "model": "claude-opus-4-6", "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 2}}


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def legacy_line(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"


# -- reading, writing, index ------------------------------------------------------------------

def test_put_get_roundtrip_and_index_file(tmp_path):
    cache = ResponseCache(tmp_path)
    assert len(cache) == 0 and cache.get("nope") is None and "nope" not in cache
    reqs = [req(i) for i in range(5)]
    assert all(cache.put(r.key, answer(f"a{i}"), r) for i, r in enumerate(reqs))
    assert not cache.put(reqs[0].key, answer("again"), reqs[0])  # already cached
    assert len(cache) == 5 and cache.keys() == [r.key for r in reqs]
    assert cache.get(reqs[3].key)["text"] == "a3" and reqs[3].key in cache
    rec = cache.record(reqs[3].key)
    assert (
        rec["request"]["system_sha256"] == system_sha256(RUBRIC) and cache.system_text(system_sha256(RUBRIC)) == RUBRIC
    )
    kinds = [x["kind"] for x in lines(tmp_path / "responses.jsonl")]
    assert kinds == ["system"] + ["response"] * 5  # the rubric once, no duplicate line
    assert (tmp_path / INDEX_FILENAME).exists()
    # a fresh object (a new process) reads the same answers through the index
    again = ResponseCache(tmp_path)
    assert len(again) == 5 and again.get(reqs[4].key)["text"] == "a4" and again.duplicates == 0


def test_keys_since_a_mark_lists_only_new_answers(tmp_path):
    cache = ResponseCache(tmp_path)
    assert cache.mark() == 0
    cache.put("old", answer("o"))
    mark = cache.mark()
    assert mark == (tmp_path / "responses.jsonl").stat().st_size
    for name in ("n1", "n2"):
        ResponseCache(tmp_path).put(name, answer(name))  # e.g. a notebook kernel
    assert cache.keys(since=mark) == ["n1", "n2"] and cache.keys() == ["old", "n1", "n2"]


def test_missing_folder_is_not_created_until_a_put(tmp_path):
    folder = tmp_path / "nowhere"
    cache = ResponseCache(folder)
    assert len(cache) == 0 and cache.get("k") is None and not folder.exists()
    cache.put("k", answer("x"))
    assert cache.get("k")["text"] == "x" and (folder / "responses.jsonl").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    reader = ResponseCache(empty)
    assert reader.get("k") is None and len(reader) == 0 and BatchState(empty).pending() == {}
    assert list(empty.iterdir()) == []  # reading an empty folder writes no index


def test_existing_jsonl_folder_is_migrated_on_open(tmp_path):
    """A folder in the old format (no index; a duplicate; last line without newline) opens as before."""
    r1, r2 = req(1), req(2)
    sha = system_sha256(RUBRIC)
    recs = [
        {"kind": "system", "sha256": sha, "text": RUBRIC},
        {"kind": "response", "key": r1.key, "response": answer("first"), "source": "messages"},
        {"kind": "response", "key": r1.key, "response": answer("second"), "source": "messages"},
    ]
    last = {"kind": "response", "key": r2.key, "response": answer("two"), "source": "batch"}
    path = tmp_path / "responses.jsonl"
    path.write_text("".join(legacy_line(r) for r in recs) + "\n" + legacy_line(last).rstrip("\n"))
    cache = ResponseCache(tmp_path)
    assert len(cache) == 2 and cache.duplicates == 1
    assert cache.get(r1.key)["text"] == "first"  # the first line of a key wins, as before
    assert cache.get(r2.key)["text"] == "two" and cache.system_text(sha) == RUBRIC
    cache.put(req(3).key, answer("three"), req(3))  # appended after a newline is added
    assert [x.get("key") for x in lines(path)][-2:] == [r2.key, req(3).key]
    assert len(ResponseCache(tmp_path)) == 3


def test_index_follows_appends_rewrites_and_deletions(tmp_path):
    cache = ResponseCache(tmp_path)
    for i in range(3):
        cache.put(req(i).key, answer(f"a{i}"), req(i))
    path = tmp_path / "responses.jsonl"
    original = path.read_bytes()
    # another writer without the index (e.g. `git pull`) appends a line: only the tail is read
    extra = {"kind": "response", "key": "pulled", "response": answer("from git"), "source": "messages"}
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(legacy_line(extra))
    assert ResponseCache(tmp_path).get("pulled")["text"] == "from git"
    # a checkout that rewrites the file with other content: the index is rebuilt
    other = {"kind": "response", "key": "other-branch", "response": answer("b"), "source": "messages"}
    path.write_text(legacy_line(other))
    fresh = ResponseCache(tmp_path)
    assert fresh.keys() == ["other-branch"] and req(0).key not in fresh and fresh.get(req(0).key) is None
    # the old object notices too: its lookups go through the shared index
    assert cache.get(req(1).key) is None and cache.get("other-branch")["text"] == "b"
    # the file deleted: an empty cache
    path.unlink()
    assert len(ResponseCache(tmp_path)) == 0
    path.write_bytes(original)
    assert len(ResponseCache(tmp_path)) == 3


def test_same_length_edit_is_caught_by_the_key_check(tmp_path):
    """An in-place edit that keeps size and the fingerprinted tail still cannot return a wrong record."""
    cache = ResponseCache(tmp_path)
    cache.put("a" * 64, answer("x" * 5000))
    cache.put("b" * 64, answer("y" * 5000))  # > 4 KiB, so the first line is outside the tail hash
    path = tmp_path / "responses.jsonl"
    data = path.read_bytes()
    st = os.stat(path)
    path.write_bytes(data.replace(b"a" * 64, b"c" * 64, 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # even with the mtime put back
    assert cache.get("a" * 64) is None and cache.get("c" * 64)["text"] == "x" * 5000


def test_damaged_index_is_rebuilt(tmp_path):
    cache = ResponseCache(tmp_path)
    cache.put(req(1).key, answer("one"), req(1))
    cache.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{tmp_path / INDEX_FILENAME}{suffix}").unlink(missing_ok=True)
    (tmp_path / INDEX_FILENAME).write_bytes(b"this is not a sqlite database" * 100)
    assert ResponseCache(tmp_path).get(req(1).key)["text"] == "one"
    (tmp_path / INDEX_FILENAME).unlink()
    assert ResponseCache(tmp_path).get(req(1).key)["text"] == "one"


def test_torn_line_warns_then_is_cut_by_the_next_writer(tmp_path):
    cache = ResponseCache(tmp_path)
    cache.put(req(1).key, answer("one"), req(1))
    path = tmp_path / "responses.jsonl"
    good = path.read_bytes()
    with open(path, "ab") as fh:
        fh.write(b'{"kind": "response", "key": "torn", "resp')
    with pytest.warns(CacheRecoveryWarning, match="line 3"):
        reader = ResponseCache(tmp_path)
    assert len(reader) == 1 and reader.get("torn") is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the writer repairs silently
        reader.put(req(2).key, answer("two"), req(2))
        assert len(ResponseCache(tmp_path)) == 2
    assert path.read_bytes().startswith(good) and b"torn" not in path.read_bytes()


@pytest.mark.parametrize("middle, detail", [('{"kind": "x"}', "field 'kind'"), ("not json", "Expecting value")])
def test_corrupt_middle_line_is_an_error(tmp_path, middle, detail):
    (tmp_path / "responses.jsonl").write_text(f'{{"kind": "system", "sha256": "x", "text": "t"}}\n{middle}\n{{}}\n')
    with pytest.raises(ValueError, match=rf"responses.jsonl, line 2: invalid cache record: {detail}"):
        ResponseCache(tmp_path)


def test_no_key_or_header_in_any_stored_file(tmp_path, monkeypatch):
    secret = "sk-ant-" + "storetest-0123456789abcdef"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    cache = ResponseCache(tmp_path)
    cache.put(req(1).key, answer("one"), req(1))
    BatchState(tmp_path).append({"event": "submitted", "batch_id": "b1", "keys": [req(2).key]})
    cache.close()
    blob = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert secret.encode() not in blob and b"x-api-key" not in blob.lower() and b"authorization" not in blob.lower()


# -- several processes -------------------------------------------------------------------------

def named_req(name: str) -> LLMRequest:
    return LLMRequest(model="claude-opus-4-6", system=RUBRIC, version="v1", max_tokens=64,
                      messages=[{"role": "user", "content": name}])


def _key(name: str) -> str:
    return named_req(name).key


def write_answers(folder: Path, names: list[str], start=None) -> int:
    """What a writing process does: open the cache, wait for ``start`` (a barrier), put an answer
    for each of ``names``; returns how many it stored (a name already there is not stored)."""
    cache = ResponseCache(folder)
    if start is not None:
        start.wait(120)
    return sum(cache.put(_key(name), {"text": name, "model": "claude-opus-4-6", "usage": {}}, named_req(name))
               for name in names)


def in_processes(jobs: list[tuple], start_together: bool = True) -> list[int]:
    """``write_answers(*job)`` for each job, each in its own forked process, all at once (writing
    starts when every process has opened the cache); returns what each stored, in job order."""
    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(len(jobs)) if start_together else None
    results = ctx.Queue()

    def run(k: int, job: tuple) -> None:
        try:
            results.put((k, write_answers(*job, start=start)))
        except BaseException as exc:  # reported to the test
            results.put((k, repr(exc)))

    procs = [ctx.Process(target=run, args=(k, job)) for k, job in enumerate(jobs)]
    for proc in procs:
        proc.start()
    out = dict(results.get(timeout=300) for _ in procs)
    for proc in procs:
        proc.join(60)
    assert [proc.exitcode for proc in procs] == [0] * len(procs)
    return [out[k] for k in range(len(jobs))]


def test_four_processes_writing_at_once_lose_and_duplicate_nothing(tmp_path):
    n, shared, workers = 200, 50, 4
    folder = tmp_path / "cache"
    jobs = [(folder, [name for i in range(n) for name in [f"w{w}-{i}"] + ([f"shared-{i}"] if i < shared else [])])
            for w in range(workers)]
    stored = in_processes(jobs)
    expected = {f"w{w}-{i}" for w in range(workers) for i in range(n)} | {f"shared-{i}" for i in range(shared)}
    assert sum(stored) == len(expected), stored  # each shared key stored by exactly one process
    records = lines(folder / "responses.jsonl")
    texts = [r["response"]["text"] for r in records if r["kind"] == "response"]
    assert sorted(texts) == sorted(expected)  # nothing lost, nothing twice
    writers = [text.split("-")[0] for text in texts if text.startswith("w")]
    assert sum(a != b for a, b in zip(writers, writers[1:])) >= 10  # the processes really wrote at once
    assert [r["kind"] for r in records].count("system") == 1
    cache = ResponseCache(folder)
    assert len(cache) == len(expected) == 850 and cache.duplicates == 0
    assert all(cache.get(_key(name))["text"] == name for name in expected)


def test_put_in_one_process_is_seen_by_an_open_cache_in_another(tmp_path):
    reader = ResponseCache(tmp_path)
    assert reader.get(_key("late")) is None
    assert in_processes([(tmp_path, ["late"])], start_together=False) == [1]
    assert reader.get(_key("late"))["text"] == "late" and len(reader) == 1
    assert not reader.put(_key("late"), answer("mine"))  # the other process's answer stays


# -- export / import ---------------------------------------------------------------------------

def filled(folder: Path, names: list[str], system: str = RUBRIC) -> ResponseCache:
    cache = ResponseCache(folder)
    for name in names:
        r = req(name, system)
        cache.put(r.key, answer(f"answer to {name}"), r, extra={"api_version": "2023-06-01"})
    return cache


def test_export_is_sorted_and_import_of_an_export_is_byte_exact(tmp_path):
    cache = filled(tmp_path / "a", [f"p{i}" for i in range(30)])
    filled(tmp_path / "a", ["other rubric"], system="Another rubric, ünïcode kept.")
    out = tmp_path / "export.jsonl"
    assert cache.export_jsonl(out) == {"systems": 2, "responses": 31}
    exported = lines(out)
    systems, responses = exported[:2], exported[2:]
    assert ([s["kind"] for s in systems] == ["system"] * 2
            and sorted(s["sha256"] for s in systems) == [s["sha256"] for s in systems])
    assert [r["key"] for r in responses] == sorted(cache.keys())
    # every exported line is the stored line, byte for byte (canonical JSON, one record a line)
    stored = set((tmp_path / "a" / "responses.jsonl").read_bytes().splitlines())
    assert set(out.read_bytes().splitlines()) == stored
    assert all(
        line == legacy_line(json.loads(line)).rstrip("\n") for line in out.read_text(encoding="utf-8").splitlines()
    )
    # into an empty cache: its file IS the export; exporting it again gives the same bytes
    copy = ResponseCache(tmp_path / "b")
    assert copy.import_jsonl(out) == {"systems": 2, "responses": 31, "skipped": 0}
    assert (tmp_path / "b" / "responses.jsonl").read_bytes() == out.read_bytes()
    copy.export_jsonl(tmp_path / "again.jsonl")
    assert (tmp_path / "again.jsonl").read_bytes() == out.read_bytes()
    assert copy.get(req("p7").key) == cache.get(req("p7").key)


def test_import_merges_without_duplicates_and_validates_first(tmp_path):
    mine = filled(tmp_path / "mine", ["a", "b"])
    theirs = filled(tmp_path / "theirs", ["b", "c", "d"])
    before = (tmp_path / "mine" / "responses.jsonl").read_bytes()
    counts = mine.import_jsonl(tmp_path / "theirs" / "responses.jsonl")
    assert counts == {"systems": 0, "responses": 2, "skipped": 2}  # rubric and "b" already present
    assert len(mine) == 4 and mine.get(req("d").key) == theirs.get(req("d").key) and mine.duplicates == 0
    after = (tmp_path / "mine" / "responses.jsonl").read_bytes()
    assert after.startswith(before)  # append-only
    bad = tmp_path / "bad.jsonl"
    bad.write_text(legacy_line({"kind": "response", "key": "new", "response": answer("n")}) + "{oops\n")
    with pytest.raises(ValueError, match=r"bad.jsonl, line 2: invalid cache record"):
        mine.import_jsonl(bad)
    assert (tmp_path / "mine" / "responses.jsonl").read_bytes() == after  # nothing written


def test_cli_export_import_info(tmp_path, capsys):
    filled(tmp_path / "src", ["x", "y"]).close()
    out = tmp_path / "x.jsonl"
    assert cli_main(["cache", "export", "--cache-dir", str(tmp_path / "src"), str(out)]) == 0
    assert cli_main(["cache", "import", "--cache-dir", str(tmp_path / "dst"), str(out)]) == 0
    assert "added 2 responses and 1 system prompts" in capsys.readouterr().out
    assert cli_main(["cache", "info", "--cache-dir", str(tmp_path / "dst")]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["responses"] == 2 and info["duplicate_lines"] == 0 and info["pending_batches"] == []
    (tmp_path / "broken.jsonl").write_text('{"kind": "system"}\n')
    assert cli_main(["cache", "import", "--cache-dir", str(tmp_path / "dst"), str(tmp_path / "broken.jsonl")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("mechaudit: error: ") and "broken.jsonl, line 1" in err and "\n" not in err
    assert cli_main(["cache", "export", "--cache-dir", str(tmp_path / "dst"),
                     str(tmp_path / "dst" / "responses.jsonl")]) == 1


# -- the batch log -----------------------------------------------------------------------------

def test_batch_log_pending_across_objects_and_torn_tail(tmp_path):
    state = BatchState(tmp_path)
    state.append({"event": "submitted", "batch_id": "b1", "keys": ["k1", "k2"]})
    state.append({"event": "submitted", "batch_id": "b2", "keys": ["k3"]})
    state.append({"event": "collected", "batch_id": "b1"})
    assert BatchState(tmp_path).pending() == {"b2": ["k3"]}
    with open(state.path, "a", encoding="utf-8") as fh:
        fh.write('{"event": "submitted", "batch_id": "b3", "ke')  # died mid-write
    with pytest.warns(CacheRecoveryWarning, match="batches.jsonl: line 4"):
        assert BatchState(tmp_path).pending() == {"b2": ["k3"]}
    state.append({"event": "submitted", "batch_id": "b4", "keys": ["k4"]})  # cuts the torn line
    assert [e["batch_id"] for e in state.events()] == ["b1", "b2", "b1", "b4"]
    assert BatchState(tmp_path).pending() == {"b2": ["k3"], "b4": ["k4"]}
    # the log file is the truth: without the index, the same answer
    for p in tmp_path.glob(INDEX_FILENAME + "*"):
        p.unlink()
    assert BatchState(tmp_path).pending() == {"b2": ["k3"], "b4": ["k4"]}


def test_fast_key_scan_agrees_with_full_parse():
    """Indexing reads the key of a canonical response line without parsing it; it must agree with
    json.loads on tricky content and decline (None -> full parse) on anything unusual."""
    cache = ResponseCache.__new__(ResponseCache)
    tricky = ['"key": "fake", "kind": "response", ', 'he said \\"key\\": \\"x\\"', "ünï \u2028 {}", '"}']
    rng = random.Random(0)
    for i in range(300):
        text = "".join(rng.choice(tricky + ["plain words ", "\n", "\t"]) for _ in range(rng.randint(0, 6)))
        record = {"kind": "response", "key": f"k{i}", "source": "messages", "response": answer(text),
                  "request": {"messages": [{"role": "user", "content": text}], "model": "m"}}
        if i % 3 == 0:
            record["api_version"] = "2023-06-01"
            record["batch_id"] = f'b"{i}'
        raw = legacy_line(record).rstrip("\n").encode()
        assert cache._fast_entry(raw) == ("response", f"k{i}")
    for raw in [b'{"kind": "system", "sha256": "s", "text": "t"}',
                b'{"key": "a", "kind": "response", "response": {"text": "x"',  # torn
                b'{"key": "a\\"b", "kind": "response", "response": {}, "source": "m"}',
                b'{"key": "a\\\\b", "kind": "response", "response": {}, "source": "m"}',  # an escaped backslash
                b'{"key": "a", "kind": "response", "response": "not a dict", "source": "m"}']:
        assert cache._fast_entry(raw) is None


def test_a_forked_child_opens_its_own_connection(tmp_path):
    cache = ResponseCache(tmp_path)
    cache.put("parent", answer("p"))

    def child():
        cache.put("child", answer("c"))
        os._exit(0 if cache.get("parent")["text"] == "p" else 1)

    proc = multiprocessing.get_context("fork").Process(target=child)
    proc.start()
    proc.join(60)
    assert proc.exitcode == 0 and cache.get("child")["text"] == "c" and len(cache) == 2


def test_lines_appended_after_an_unterminated_line_keep_their_numbers(tmp_path):
    path = tmp_path / "responses.jsonl"
    path.write_text(legacy_line({"kind": "response", "key": "a", "response": answer("a")}).rstrip("\n"))
    assert len(ResponseCache(tmp_path)) == 1
    with open(path, "a", encoding="utf-8") as fh:  # e.g. a merge that adds lines after it
        fh.write("\n" + legacy_line({"kind": "response", "key": "b", "response": answer("b")}) + "{bad\n")
    with pytest.raises(ValueError, match=r"responses.jsonl, line 3: invalid cache record"):
        ResponseCache(tmp_path)


def test_every_cache_append_is_fsynced(tmp_path, monkeypatch):
    """A record is durable when ``put`` returns: each append (put, batch log, import) is followed by
    an ``fsync`` of the file it wrote; a put of a cached key writes and syncs nothing."""
    synced: list[str] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    cache = ResponseCache(tmp_path / "a")
    reqs = [req(i) for i in range(4)]
    for i, r in enumerate(reqs):
        before = synced.count("responses.jsonl")
        assert cache.put(r.key, answer(f"a{i}"), r)
        assert synced.count("responses.jsonl") == before + 1, f"put {i} was not fsynced"
    assert synced.count("a") == 1  # the folder once, when its log file was made
    before = len(synced)
    assert not cache.put(reqs[0].key, answer("again"), reqs[0])
    assert len(synced) == before  # nothing appended, nothing synced
    log = BatchState(tmp_path / "a")
    before = synced.count(log.path.name)
    log.append({"event": "submitted", "batch_id": "b1", "keys": ["k"]})
    assert synced.count(log.path.name) == before + 1
    other = ResponseCache(tmp_path / "b")
    before = synced.count("responses.jsonl")
    assert other.import_jsonl(tmp_path / "a" / "responses.jsonl")["responses"] == 4
    assert synced.count("responses.jsonl") == before + 1


def test_invalid_records_and_batch_events_name_the_missing_field(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"kind": "response", "response": {}}) + "\n")
    with pytest.raises(ValueError, match=r"line 1: invalid cache record: field 'key' or 'response' missing"):
        ResponseCache(tmp_path / "c").import_jsonl(bad)
    bad.write_text(json.dumps({"kind": "system", "sha256": "x"}) + "\n")
    with pytest.raises(ValueError, match=r"invalid cache record: field 'sha256' or 'text' missing"):
        ResponseCache(tmp_path / "c").import_jsonl(bad)
    log = BatchState(tmp_path / "c")
    with pytest.raises(ValueError, match="field 'keys' missing"):
        log.append({"event": "submitted", "batch_id": "b1"})
    with pytest.raises(ValueError, match="field 'batch_id' missing"):
        log.append({"event": "collected"})
    assert log.events() == []  # nothing was written


def test_a_large_first_index_restores_the_page_cache_size(tmp_path, monkeypatch):
    """Indexing a large file raises the index connection's page cache for the run and sets it back."""
    from mechaudit.llm import cachelog as store

    writer = ResponseCache(tmp_path)
    for i in range(3):
        writer.put(req(i).key, answer(f"a{i}"), req(i))
    usual = ResponseCache(tmp_path)
    assert len(usual) == 3
    normal = usual._handles["conn"].execute("PRAGMA cache_size").fetchone()[0]
    writer.close()
    usual.close()
    for p in tmp_path.glob(INDEX_FILENAME + "*"):
        p.unlink()  # a first index of the whole file, as on a fresh clone
    monkeypatch.setattr(store, "_BIG_BYTES", 0)  # every first index counts as large
    sizes = []
    index_rest = store.IndexedLog._index_rest

    def spy(self, conn, *args):
        sizes.append(conn.execute("PRAGMA cache_size").fetchone()[0])
        return index_rest(self, conn, *args)

    monkeypatch.setattr(store.IndexedLog, "_index_rest", spy)
    fresh = ResponseCache(tmp_path)
    assert len(fresh) == 3 and fresh.get(req(2).key)["text"] == "a2"
    assert sizes[0] == -store._BIG_CACHE_KIB  # larger while indexing
    assert fresh._handles["conn"].execute("PRAGMA cache_size").fetchone()[0] == normal  # and back after


def test_a_torn_last_batch_event_is_skipped_and_a_bad_middle_one_names_its_line(tmp_path):
    state = BatchState(tmp_path)
    state.append({"event": "submitted", "batch_id": "b1", "keys": ["k1"]})
    with open(state.path, "a", encoding="utf-8") as fh:
        fh.write('{"event": "collected", "batch')  # died mid-write
    assert [e["batch_id"] for e in state.events()] == ["b1"]
    state.path.write_text('{"event": "submitted", "batch_id": "b1", "keys": []}\n{bad\n'
                          '{"event": "collected", "batch_id": "b1"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"batches.jsonl, line 2: invalid batch state record"):
        state.events()


def test_sent_requests_without_an_answer_are_found_from_a_mark(tmp_path):
    from mechaudit.llm.ledger import cache_state, record_sent, sent_mark, unanswered

    folder = tmp_path / "c"
    assert (sent_mark(folder), cache_state(folder), unanswered(folder)) == (0, 0, set())
    record_sent(folder, "k1")
    mark = sent_mark(folder)
    record_sent(folder, "k2")
    assert mark == 3 and sent_mark(folder) == 6
    ResponseCache(folder).put("k1", answer("a"))
    assert unanswered(folder) == {"k2"} and unanswered(folder, since=mark) == {"k2"}
    record_sent(folder, "k3")
    assert unanswered(folder, since=sent_mark(folder)) == set()
    assert cache_state(folder) == ResponseCache(folder).mark() > 0


def test_an_index_for_a_read_only_folder_lives_in_the_temporary_folder(tmp_path, monkeypatch):
    import hashlib
    import tempfile

    from mechaudit.llm.cacheindex import _fallback_path

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    tag = hashlib.sha256(str(tmp_path.resolve()).encode()).hexdigest()[:20]
    expected = tmp_path / "tmp" / "mechaudit-cache-index" / f"{tag}-index.sqlite"
    assert _fallback_path(tmp_path, "index.sqlite") == expected and expected.parent.is_dir()
    assert _fallback_path(tmp_path, "index.sqlite") == expected  # the folder already there is fine


def test_the_usage_summary_names_every_model_without_a_price():
    from mechaudit.llm.ledger import UsageLedger, load_prices
    from mechaudit.llm.request import Usage

    ledger = UsageLedger(load_prices())
    for model in ("zz-unpriced", "aa-unpriced"):
        ledger.add(model, "api", Usage(input_tokens=5, output_tokens=1))
    assert ledger.summary().splitlines()[-1] == "estimated total: unknown USD (no price for: aa-unpriced, zz-unpriced)"


def test_an_index_built_in_several_inserts_holds_every_record(tmp_path, monkeypatch):
    import mechaudit.llm.cachelog as cachelog

    cache = ResponseCache(tmp_path)
    for i in range(5):
        cache.put(f"k{i}", answer(f"a{i}"))
    cache.close()
    for p in tmp_path.glob(INDEX_FILENAME + "*"):
        p.unlink()
    monkeypatch.setattr(cachelog, "_ROWS_PER_INSERT", 2)  # five lines: inserts of 2, 2 and 1
    again = ResponseCache(tmp_path)
    assert len(again) == 5 and [again.get(f"k{i}")["text"] for i in range(5)] == [f"a{i}" for i in range(5)]


def test_a_new_log_file_is_readable_by_all_and_writable_by_its_owner(tmp_path):
    old = os.umask(0o022)
    try:
        ResponseCache(tmp_path).put("k", answer("a"))
    finally:
        os.umask(old)
    assert (tmp_path / "responses.jsonl").stat().st_mode & 0o777 == 0o644



def test_importing_an_empty_file_into_a_new_folder_adds_nothing(tmp_path):
    source = tmp_path / "empty.jsonl"
    source.write_text("", encoding="utf-8")
    assert ResponseCache(tmp_path / "new").import_jsonl(source) == {"systems": 0, "responses": 0, "skipped": 0}
    assert len(ResponseCache(tmp_path / "new")) == 0


def test_an_answer_put_without_a_source_is_a_messages_answer(tmp_path):
    ResponseCache(tmp_path).put("k", answer("a"))
    assert ResponseCache(tmp_path).record("k")["source"] == "messages"


def test_reads_reuse_one_file_descriptor(tmp_path):
    ResponseCache(tmp_path).put("k", answer("a"))
    reader = ResponseCache(tmp_path)
    assert reader.get("k")["text"] == "a"
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        assert reader.get("k")["text"] == "a"
    assert len(os.listdir("/proc/self/fd")) == before


def test_an_index_that_stays_locked_while_it_switches_to_wal_is_an_error(tmp_path, monkeypatch):
    import sqlite3

    import mechaudit.llm.cacheindex as cacheindex

    path = tmp_path / "index.sqlite"
    cacheindex.connect(path).close()
    plain = sqlite3.connect(str(path), isolation_level=None)
    plain.execute("PRAGMA journal_mode = DELETE")
    plain.execute("BEGIN IMMEDIATE")  # another writer holds the file: no switch to WAL can happen
    monkeypatch.setattr(cacheindex, "BUSY_TIMEOUT_S", 0.0)
    tries = []
    monkeypatch.setattr(cacheindex.time, "sleep", tries.append)
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            cacheindex.connect(path)
    finally:
        plain.execute("ROLLBACK")
        plain.close()
    assert len(tries) == 199  # 200 attempts, a pause between each two


def test_a_put_indexes_only_its_own_line(tmp_path, monkeypatch):
    cache = ResponseCache(tmp_path)
    for i in range(5):
        cache.put(f"k{i}", answer(f"a{i}"))
    indexed = []
    real = ResponseCache._index_items

    def spy(self, conn, row, items):
        indexed.append(len(items))
        return real(self, conn, row, items)

    monkeypatch.setattr(ResponseCache, "_index_items", spy)
    cache.put("k5", answer("a5"))
    assert indexed == [1] and len(ResponseCache(tmp_path)) == 6
    reader = ResponseCache(tmp_path)
    indexed.clear()
    assert reader.get("k0")["text"] == "a0" and "k5" in reader and len(reader) == 6
    assert reader.keys(since=reader.mark()) == [] and len(reader.keys()) == 6
    assert indexed == []  # reads of an index that is up to date index nothing


def test_an_index_beside_logs_it_cannot_write_goes_to_the_temporary_folder(tmp_path, monkeypatch):
    import sqlite3
    import tempfile

    import mechaudit.llm.cacheindex as cacheindex

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    data = tmp_path / "data"
    data.mkdir()
    fallback = cacheindex._fallback_path(data, "index.sqlite")
    with monkeypatch.context() as m:  # a folder this process may not write to
        m.setattr(cacheindex.os, "access", lambda path, mode: False)
        conn = cacheindex.open_index(data, data / "index.sqlite")
    assert conn.execute("PRAGMA database_list").fetchone()[2] == str(fallback) and not (data / "index.sqlite").exists()
    conn.close()
    real = cacheindex.connect

    def refused(path):  # writable by its mode, refused by sqlite (e.g. a read-only mount)
        if path == data / "index.sqlite":
            raise sqlite3.OperationalError("attempt to write a readonly database")
        return real(path)

    monkeypatch.setattr(cacheindex, "connect", refused)
    conn = cacheindex.open_index(data, data / "index.sqlite")
    assert conn.execute("PRAGMA database_list").fetchone()[2] == str(fallback)
    conn.close()


def test_close_releases_every_file_the_cache_opened(tmp_path):
    ResponseCache(tmp_path).put("k", answer("a"))
    before = len(os.listdir("/proc/self/fd"))
    reader = ResponseCache(tmp_path)
    assert reader.get("k")["text"] == "a" and len(os.listdir("/proc/self/fd")) > before
    reader.close()
    assert len(os.listdir("/proc/self/fd")) == before
