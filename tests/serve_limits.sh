#!/usr/bin/env bash
# `rotor serve`'s connection limits, timeouts and stopping, on a tiny checkpoint trained on real text:
#  - with --max-connections 8, ten idle connections are held: a new client gets 503 (the JSON error
#    naming --max-connections, Retry-After, Connection: close), not a reset; when the first closes,
#    the ninth is served and a new client still gets 503; after --timeout 2 the server closes the
#    idle ones (between 1.3 and 4 s) and new clients are served;
#  - a client trickling its headers, or its body, one byte every 0.5 s (each byte restarts MHD's own
#    idle timer) is cut off within 4 s;
#  - a completion whose model work takes longer than --timeout (64 rows of 240 tokens on the CPU)
#    is answered 200, and its keep-alive connection takes another request after it;
#  - a negative, non-numeric or too large Content-Length gets exactly one status line: one 400 or 413
#    with the JSON error, and the server keeps answering;
#  - messages: a bad top_p names top_p; a bad /detokenize id names tokens[i]; a number as /tokenize's
#    prompt says it must be a string; 'Authorization: bearer KEY' in any case is accepted, a wrong key
#    or scheme is not;
#  - SIGTERM with a long generation in flight: its client gets the whole 200 answer, a new connection
#    is refused, a request on a connection opened before gets 503, the server says what it waits for
#    and exits 0;
#  - SIGTERM with --grace 1: the generation under way and the one queued behind it get 503 (not a
#    dropped connection) once the grace period is over, and the server exits 0.
set -uo pipefail
rotor=$1
. "$(dirname "$0")/text_ckpt_lib.sh"

train_ckpt fox-selective.ini 20 --set train.seq_len=256

# start_server LOG OPTION...: rotor serve on a free port in the background, on the CPU (where the
# heavy request below takes seconds); sets $pid and $port
start_server() {
  local log=$1
  shift
  "$rotor" serve --ckpt "$ckpt" --port 0 --device cpu --threads 1 "$@" >"$out/$log.out" 2>"$out/$log.err" &
  pid=$!
  for _ in $(seq 100); do grep -q "on http://" "$out/$log.out" && break; sleep 0.2; done
  port=$(sed -n 's|.*on http://127.0.0.1:\([0-9]*\)/v1.*|\1|p' "$out/$log.out")
  [ -n "$port" ] || { cat "$out/$log.err"; fail "the server did not start"; finish serve_limits; }
}
# exited_0 WHAT: the server ($pid), signalled, ends with status 0
exited_0() {
  wait $pid
  local status=$?
  [ $status = 0 ] || fail "$1: exit status $status"
}

# The clients' helpers, shared by the two Python parts below.
cat >"$out/clients.py" <<'PY'
import http.client, json, socket, time

HEAVY = {"prompt": ["ROMEO:"] * 8, "n": 8, "max_tokens": 240, "temperature": 0.9, "seed": 3}  # 64 rows: seconds

def connect(port):
    return http.client.HTTPConnection("127.0.0.1", port, timeout=120)

def call(port, method, path, body=None, headers=None, conn=None):
    c = conn or connect(port)
    c.request(method, path, body=None if body is None else json.dumps(body),
              headers={"Content-Type": "application/json", **(headers or {})})
    r = c.getresponse()
    text = r.read()
    if conn is None:
        c.close()
    return r.status, json.loads(text), r

def raw(port, data, wait=10):
    """Sends bytes on a new connection and reads until the server closes it."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(data)
    s.settimeout(wait)
    got = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    except OSError as e:
        got += f"<{e}>".encode()
    s.close()
    return got

def closed_after(sock, since, limit):
    """Seconds from `since` until the server closes sock (EOF or reset), or None after limit."""
    sock.settimeout(max(0.01, since + limit - time.time()))
    try:
        sock.recv(1)
    except socket.timeout:
        return None
    except OSError:
        pass
    return time.time() - since

def trickle(port, head, body=b"", every=0.5, limit=8):
    """Sends head at once, then body one byte per `every` seconds (or head so when body is empty);
    returns the seconds until the server cut the connection, or None."""
    s = socket.create_connection(("127.0.0.1", port))
    slow = body or head
    if body:
        s.sendall(head)
    t0 = time.time()
    s.settimeout(every)
    for i in range(len(slow)):
        try:
            s.sendall(slow[i:i + 1])
            if s.recv(1) == b"":
                return time.time() - t0
        except socket.timeout:
            pass
        except OSError:
            return time.time() - t0
        if time.time() - t0 > limit:
            return None
    return None
PY

# -- limits, timeouts, Content-Length, messages
start_server limits --max-connections 8 --timeout 2 --api-key sekret --max-body 65536
/usr/bin/python3 - "$port" "$out" <<'PY' || fail "limit checks"
import json, socket, sys, threading, time
sys.path.insert(0, sys.argv[2])
from clients import *

port = int(sys.argv[1])
KEY = {"Authorization": "Bearer sekret"}

# -- more idle connections than --max-connections: 503 while they are held, served after --timeout
opened = time.time()
idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(10)]
time.sleep(0.3)
s, res, r = call(port, "GET", "/health")
assert s == 503, (s, res)
assert "--max-connections" in res["error"]["message"] and res["error"]["code"] == 503, res
assert r.getheader("Retry-After") == "1" and r.getheader("Connection") == "close", r.getheaders()
idle[0].close()  # the oldest waiting one, the ninth, takes its place; the tenth and a new one still wait
time.sleep(0.3)
idle[8].sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
assert idle[8].recv(4096).startswith(b"HTTP/1.1 200 "), "the ninth connection was not admitted"
assert call(port, "GET", "/health")[0] == 503
times = [closed_after(c, opened, 6) for c in idle[1:]]
assert all(t is not None and 1.3 < t < 4 for t in times), times
s, res, _ = call(port, "GET", "/health")
assert s == 200, (s, res)
print(f"idle connections: 503 while held, closed after {min(times):.1f} to {max(times):.1f} s, then served")

# -- trickling clients are cut off although each byte comes within MHD's own timeout
t = trickle(port, b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 40 + b"\r\n\r\n")
assert t is not None and t < 4, t
body = json.dumps({"prompt": "ROMEO: a trickling body"}).encode()
t2 = trickle(port, b"POST /tokenize HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sekret\r\nContent-Length: "
             + str(len(body)).encode() + b"\r\n\r\n", body)
assert t2 is not None and t2 < 4, t2
print(f"trickling headers cut after {t:.1f} s, a trickling body after {t2:.1f} s")

# -- model work longer than --timeout is answered, and the connection stays usable
c = connect(port)
t0 = time.time()
s, res, _ = call(port, "POST", "/v1/completions", HEAVY, KEY, conn=c)
took = time.time() - t0
assert s == 200 and len(res["choices"]) == 64, (s, res.get("error"))
assert took > 2, f"the heavy request took {took:.1f} s: not longer than --timeout, so it tests nothing"
s, res, _ = call(port, "GET", "/v1/models", None, KEY, conn=c)
assert s == 200, (s, res)
c.close()
print(f"a completion of {took:.1f} s (--timeout 2): answered, and its connection kept")

# -- a Content-Length MHD cannot read: exactly one response
for value, status in ((b"-5", 400), (b"abc", 400), (b"12abc", 400), (b"99999999999999999999999", 413)):
    got = raw(port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + value + b"\r\n\r\n")
    assert got.count(b"HTTP/1.") == 1, got
    head, _, text = got.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 %d " % status), got
    length = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0].split(b":")[1])
    assert length == len(text) and str(value.decode()) in json.loads(text)["error"]["message"], got
assert call(port, "GET", "/health")[0] == 200
print("unreadable Content-Length: one 400 or 413 each")

# -- messages name what the client sent
def error(path, body, headers=KEY):
    s, res, _ = call(port, "POST", path, body, headers)
    assert s == 400, (path, body, s, res)
    return res["error"]
e = error("/v1/completions", {"prompt": "a", "top_p": 1.5})
assert e["param"] == "top_p" and e["message"].startswith("top_p = 1.5"), e
e = error("/v1/completions", {"prompt": "a", "top_k": -3})
assert e["param"] == "top_k" and e["message"].startswith("top_k = -3"), e
e = error("/detokenize", {"tokens": [1, 2, 3, 99999]})
assert e["param"] == "tokens" and e["message"].startswith("tokens[3] = 99999") and "[0, 32000)" in e["message"], e
e = error("/detokenize", {"tokens": [1, "x"]})
assert e["param"] == "tokens" and "tokens[1]" in e["message"] and "got a string" in e["message"], e
e = error("/tokenize", {"prompt": 12})
assert e["param"] == "prompt" and "prompt must be a string, got an integer" == e["message"], e
e = error("/tokenize", {"text": "a"})
assert "prompt is required" in e["message"], e
e = error("/v1/completions", {"prompt": "a", "max_tokens": "many"})
assert e["message"] == "max_tokens must be an integer, got a string", e
for scheme in ("bearer", "BEARER", "BeArEr"):
    s, res, _ = call(port, "GET", "/v1/models", headers={"Authorization": f"{scheme} sekret"})
    assert s == 200, (scheme, s, res)
for header in ("Bearer sekre", "Bearer sekretx", "Bearer Sekret", "Basic sekret", "Bearer", "sekret"):
    s, res, _ = call(port, "GET", "/v1/models", headers={"Authorization": header})
    assert s == 401, (header, s, res)
print("messages: top_p, top_k, tokens[i], prompt's type, the bearer scheme in any case")
PY

# -- SIGTERM with a long generation in flight
/usr/bin/python3 - "$port" "$out" "$pid" <<'PY' || fail "SIGTERM checks"
import os, signal, socket, sys, threading, time
sys.path.insert(0, sys.argv[2])
from clients import *

port, pid = int(sys.argv[1]), int(sys.argv[3])
KEY = {"Authorization": "Bearer sekret"}
got = {}
def heavy():
    got["answer"] = call(port, "POST", "/v1/completions", HEAVY, KEY)
t = threading.Thread(target=heavy)
t.start()
time.sleep(1)
kept = connect(port)
assert call(port, "GET", "/health", conn=kept)[0] == 200  # a keep-alive connection opened before SIGTERM
time.sleep(0.2)  # its answer is done on the server's side too: one request in flight
os.kill(pid, signal.SIGTERM)
time.sleep(0.3)
try:
    refused = call(port, "GET", "/health")[0]
except ConnectionRefusedError:
    refused = "refused"
assert refused in ("refused", 503), refused
s, res, _ = call(port, "GET", "/health", conn=kept)
assert s == 503 and "stopping" in res["error"]["message"], (s, res)
t.join()
s, res, _ = got["answer"]
assert s == 200 and len(res["choices"]) == 64 and res["usage"]["completion_tokens"] > 64, (s, res.get("error"))
print(f"SIGTERM: the request in flight answered whole, a new connection {refused}, an open one 503")
PY
exited_0 "SIGTERM"
grep -q "SIGTERM, stopping: 1 request in flight, waiting up to 30 s (--grace)" "$out/limits.err" ||
  fail "no stopping message: $(grep stopping "$out/limits.err")"
grep -q "every request in flight was answered" "$out/limits.err" || fail "no message that all were answered"

# -- SIGTERM with --grace 1: what is left then gets 503
start_server grace --grace 1
/usr/bin/python3 - "$port" "$out" "$pid" <<'PY' || fail "grace checks"
import os, signal, sys, threading, time
sys.path.insert(0, sys.argv[2])
from clients import *

port, pid = int(sys.argv[1]), int(sys.argv[3])
got = [None, None]
def client(k, body):
    got[k] = call(port, "POST", "/v1/completions", body)
running = threading.Thread(target=client, args=(0, HEAVY))
running.start()
time.sleep(0.5)
queued = threading.Thread(target=client, args=(1, {"prompt": "KING", "max_tokens": 3, "echo": True}))
queued.start()  # another max_tokens and echo: it waits for the next batch
time.sleep(0.5)
t0 = time.time()
os.kill(pid, signal.SIGTERM)
running.join()
queued.join()
took = time.time() - t0
for s, res, r in got:
    assert s == 503 and "--grace" in res["error"]["message"] and r.getheader("Retry-After") == "1", (s, res)
assert took < 3.5, took
print(f"--grace 1: the running and the queued completion got 503 after {took:.1f} s")
PY
exited_0 "SIGTERM after the grace period"
grep -q "2 requests still in flight" "$out/grace.err" ||
  fail "no message on the requests left: $(tail -3 "$out/grace.err")"
finish serve_limits
