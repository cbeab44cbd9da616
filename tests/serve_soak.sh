#!/usr/bin/env bash
# A bounded soak of `rotor serve` on a tiny checkpoint trained on real text, 127.0.0.1 only: 16
# clients for ROTOR_SOAK_SECONDS (default 60, at least 20: 10 of warm-up, then the rest), each on
# its own keep-alive connection, mixing scoring (echo + logprobs), generation (greedy and seeded, n
# up to 2, stop strings), /tokenize then /detokenize, and bad requests (malformed JSON, wrong types,
# ids outside the vocabulary, a prompt over the context, unknown endpoints, the wrong method), plus
# bad requests on connections of their own (bodies over --max-body, a negative Content-Length).
# Meanwhile a prober holds more idle connections than --max-connections 32, and a trickling client,
# every few seconds: a request on a new connection then gets 503, and the server must close the idle
# and trickling ones within --timeout 3 (+ 2 s).
# Passes when: every good request is answered 200 in the answer's shape, every bad one with its
# expected 4xx (a 503 only on a new connection while the prober holds the limit), no client's
# connection is dropped, the server's stderr has only its own lines (and libmicrohttpd's notes on
# the connections cut mid-request), VmRSS at the end (clients stopped) is at most 20 MB above VmRSS
# after the warm-up, and SIGTERM then exits 0.
set -uo pipefail
rotor=$1
. "$(dirname "$0")/text_ckpt_lib.sh"
seconds=${ROTOR_SOAK_SECONDS:-60}

train_ckpt fox-selective.ini 20 --set train.seq_len=256

"$rotor" serve --ckpt "$ckpt" --port 0 --threads 1 --max-connections 32 --timeout 3 --max-body 65536 \
  >"$out/serve.out" 2>"$out/serve.err" &
pid=$!
for _ in $(seq 100); do grep -q "on http://" "$out/serve.out" && break; sleep 0.2; done
port=$(sed -n 's|.*on http://127.0.0.1:\([0-9]*\)/v1.*|\1|p' "$out/serve.out")
[ -n "$port" ] || { cat "$out/serve.err"; fail "the server did not start"; finish serve_soak; }

/usr/bin/python3 - "$port" "$pid" "$seconds" "$shared/text/tinyshakespeare.txt" <<'PY' || fail "soak"
import collections, http.client, json, random, socket, sys, threading, time

port, pid, seconds, text_file = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
WARMUP, CLIENTS, LIMIT, TIMEOUT, RSS_BOUND_KB = 10.0, 16, 32, 3.0, 20 * 1024
lines = [l.strip() for l in open(text_file) if len(l.strip()) > 20][:2000]
t_start = time.time()
t_end = t_start + seconds
lock = threading.Lock()
counts = collections.Counter()
failures = []
windows = []  # (start, end) of the prober's holds: a 503 on a new connection is expected only there

def rss_kb():
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS:"):
            return int(l.split()[1])

def failed(what):
    with lock:
        failures.append(what)

def count(what):
    with lock:
        counts[what] += 1

def check_completion(body, res):
    n = body.get("n", 1) * (len(body["prompt"]) if isinstance(body["prompt"], list) else 1)
    assert res["object"] == "text_completion" and len(res["choices"]) == n, res
    for c in res["choices"]:
        if body.get("logprobs") is not None:
            lp = c["logprobs"]
            assert len(lp["tokens"]) == len(lp["token_logprobs"]) == len(lp["top_logprobs"]), lp
        for stop in body.get("stop", []):
            assert stop not in c["text"], (stop, c["text"])

def good_request(rng, k):
    kind = rng.random()
    prompt = rng.choice(lines)
    if kind < 0.4:
        body = {"prompt": [prompt, rng.choice(lines)][:rng.randint(1, 2)], "max_tokens": rng.randint(0, 1),
                "echo": True, "logprobs": rng.randint(0, 3), "temperature": 0}
        return "scoring", "POST", "/v1/completions", body, check_completion
    if kind < 0.8:
        body = {"prompt": prompt, "max_tokens": rng.randint(1, 10), "temperature": rng.choice([0, 0.8]),
                "seed": k, "n": rng.randint(1, 2), "top_k": rng.choice([0, 40])}
        if rng.random() < 0.3:
            body["stop"] = ["\n"]
        return "generation", "POST", "/v1/completions", body, check_completion
    return "tokenize", "POST", "/tokenize", {"prompt": prompt}, None

BAD_KEEP = [  # answered by the handler: the connection stays open
    ("POST", "/v1/completions", '{"prompt": "a", ', 400),
    ("POST", "/v1/completions", json.dumps({"prompt": 12}), 400),
    ("POST", "/v1/completions", json.dumps({"prompt": "a", "max_tokens": "many"}), 400),
    ("POST", "/v1/completions", json.dumps({"prompt": "a", "top_p": 2}), 400),
    ("POST", "/v1/completions", json.dumps({"prompt": [[5, 40000]]}), 400),
    ("POST", "/v1/completions", json.dumps({"prompt": [5] * 300}), 400),
    ("POST", "/detokenize", json.dumps({"tokens": [1, 99999]}), 400),
    ("POST", "/tokenize", json.dumps({"prompt": None}), 400),
    ("GET", "/v2/nothing", None, 404),
    ("GET", "/v1/completions", None, 405),
]

def exchange(conn, method, path, body):
    conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    return r.status, json.loads(r.read())

def fresh_bad(rng):
    """A bad request on a connection of its own: a body over --max-body, or a negative Content-Length."""
    sent = time.time()
    if rng.random() < 0.5:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            status, res = exchange(c, "POST", "/v1/completions", json.dumps({"prompt": "a" * 70000}))
        finally:
            c.close()
        name, want = "oversize", 413
    else:
        s = socket.create_connection(("127.0.0.1", port), timeout=60)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n")
        got = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        s.close()
        assert got.count(b"HTTP/1.") == 1, got
        status = int(got.split(b" ")[1])
        name, want = "negative length", 400
    if status == 503:
        with lock:
            expected = any(a - 0.5 <= sent and (b is None or sent <= b + 0.5) for a, b in windows)
        if not expected:
            failed(f"{name}: 503 outside the prober's holds")
        count("503 (limit held)")
    elif status != want:
        failed(f"{name}: {status}, expected {want}")
    count(name)

def client(k):
    rng = random.Random(k)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    while time.time() < t_end:
        try:
            r = rng.random()
            if r < 0.05:
                fresh_bad(rng)
                continue
            if r < 0.25:
                method, path, body, want = rng.choice(BAD_KEEP)
                status, res = exchange(conn, method, path, body)
                if status != want or "message" not in res.get("error", {}):
                    failed(f"bad {method} {path} {str(body)[:40]}: {status} {res}")
                count("bad")
                continue
            name, method, path, body, check = good_request(rng, k)
            status, res = exchange(conn, method, path, json.dumps(body))
            if status == 200 and name == "tokenize":  # and back
                assert res["count"] == len(res["tokens"]) and res["tokens"][0] == 1, res
                status, res = exchange(conn, "POST", "/detokenize", json.dumps({"tokens": res["tokens"][1:]}))
                assert status != 200 or isinstance(res["prompt"], str), res
            if status != 200:
                failed(f"{name}: {status} {res}")
            elif check:
                check(body, res)
            count(name)
        except Exception as e:  # a dropped connection, a wrong shape
            failed(f"client {k}: {type(e).__name__}: {e}")
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

def prober():
    """Holds LIMIT idle connections and a trickling one every few seconds: a new client gets 503,
    and the server closes them all within --timeout."""
    while time.time() + TIMEOUT + 4 < t_end:
        time.sleep(2)
        with lock:
            windows.append((time.time(), None))
        opened = time.time()
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(LIMIT)]
        slow = socket.create_connection(("127.0.0.1", port))
        time.sleep(0.2)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        status, res = exchange(c, "GET", "/health", None)
        c.close()
        if status != 503 or "--max-connections" not in res["error"]["message"]:
            failed(f"prober: {status} {res} with the limit held")
        head = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 60 + b"\r\n\r\n"
        cut = None
        for i in range(len(head)):  # one byte per 0.5 s
            try:
                slow.sendall(head[i:i + 1])
                slow.settimeout(0.5)
                if slow.recv(1) == b"":
                    cut = time.time() - opened
                    break
            except socket.timeout:
                pass
            except OSError:
                cut = time.time() - opened
                break
            if time.time() - opened > TIMEOUT + 2:
                break
        if cut is None:
            failed("prober: a trickling client was not cut off")
        for sock in idle:
            sock.settimeout(max(0.01, opened + TIMEOUT + 2 - time.time()))
            try:
                sock.recv(1)
            except socket.timeout:
                failed("prober: an idle connection was not closed within --timeout + 2 s")
            except OSError:
                pass
            sock.close()
        slow.close()
        with lock:
            windows[-1] = (windows[-1][0], time.time())
        count("prober rounds")

threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)] + [threading.Thread(target=prober)]
for t in threads:
    t.start()
time.sleep(WARMUP)
rss_warm = rss_kb()
for t in threads:
    t.join()
time.sleep(1)
rss_end = rss_kb()
c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
assert exchange(c, "GET", "/health", None)[0] == 200, "the server does not answer after the soak"
growth = rss_end - rss_warm
summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
print(f"soak: {time.time() - t_start:.0f} s, {CLIENTS} clients: {summary}")
print(f"VmRSS after the warm-up {rss_warm / 1024:.1f} MB, at the end {rss_end / 1024:.1f} MB (+{growth / 1024:.1f} MB)")
for f in failures[:20]:
    print("FAIL:", f)
assert not failures, f"{len(failures)} failures"
assert counts["prober rounds"] >= 2 and counts["scoring"] and counts["generation"] and counts["bad"], counts
assert growth <= RSS_BOUND_KB, f"VmRSS grew by {growth / 1024:.1f} MB, more than {RSS_BOUND_KB / 1024:.0f} MB"
PY

kill -TERM $pid
wait $pid
status=$?
[ $status = 0 ] || fail "SIGTERM: exit status $status"
# besides its own lines, only libmicrohttpd's notes on the connections cut mid-request (the tricklers)
others=$(grep -v -e "^rotor serve: " -e "^Connection socket is closed when reading request" \
  -e "^Socket has been disconnected when reading request" "$out/serve.err" | head -5)
[ -z "$others" ] || fail "the server's stderr has other lines: $others"
finish serve_soak
