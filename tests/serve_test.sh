#!/usr/bin/env bash
# `rotor serve` end to end on a tiny checkpoint trained on real text (Mistral tokenizer):
#  - every endpoint answers in the shape OpenAI clients and lm-evaluation-harness read;
#  - echo log-probabilities give `rotor eval`'s per-request log-likelihoods (1e-4) and is_greedy,
#    the harness's way (token_logprobs[ctxlen:-1], top-1 comparison);
#  - a seeded sampled batch equals `rotor generate --prompts` with the same seed;
#  - 15 clients at once get the answers they get one at a time (scoring requests and
#    generations that wait together run as one batch); sampled requests with different seeds
#    and settings that wait behind a long one run as one batch and answer as they do alone;
#  - each bad input gets its 4xx naming the field or limit, and the server keeps answering;
#    a client that leaves mid-request does not stop it; the API key is required;
#  - a second server on its port fails with one line naming the address;
#  - SIGTERM stops it with status 0.
set -uo pipefail
rotor=$1
. "$(dirname "$0")/text_ckpt_lib.sh"

train_ckpt fox-selective.ini 60 --set train.seq_len=256

"$rotor" eval --ckpt "$ckpt" --tasks piqa,lambada_openai --data-dir "$shared/eval" --limit 6 --batch 4 --threads 1 \
  --out "$out/results.json" --log-samples "$out/samples.jsonl" >"$out/eval.log" 2>&1 || fail "eval"
printf '%s\n' '{"prompt": "ROMEO: I"}' '{"prompt": "First Citizen:\nWe are"}' '{"prompt": "KING"}' >"$out/prompts.jsonl"
"$rotor" generate --ckpt "$ckpt" --prompts "$out/prompts.jsonl" --seed 7 --temperature 0.8 --top-k 50 \
  --max-new-tokens 12 --threads 1 >"$out/generated.jsonl" 2>"$out/generate.err" || fail "generate"

"$rotor" serve --ckpt "$ckpt" --port 0 --threads 1 --api-key sekret --max-body 65536 --max-prompts 8 \
  >"$out/serve.out" 2>"$out/serve.err" &
pid=$!
for _ in $(seq 100); do grep -q "on http://" "$out/serve.out" && break; sleep 0.2; done
port=$(sed -n 's|.*on http://127.0.0.1:\([0-9]*\)/v1.*|\1|p' "$out/serve.out")
[ -n "$port" ] || { cat "$out/serve.err"; fail "the server did not start"; finish serve; }
# a second server on its port: one line naming the address and the options, nothing else
if timeout 60 "$rotor" serve --ckpt "$ckpt" --port "$port" --threads 1 >/dev/null 2>"$out/second.err"; then
  fail "a second server on port $port started"
fi
[ "$(cat "$out/second.err")" = "rotor: error: cannot listen on 127.0.0.1 port $port (--host, --port): Address already in use" ] ||
  { cat "$out/second.err"; fail "a second server on the port: not the one error line"; }

/usr/bin/python3 - "$port" "$out" <<'PY' || fail "server checks"
import http.client, json, socket, sys, threading, time

port, out = int(sys.argv[1]), sys.argv[2]
KEY = {"Authorization": "Bearer sekret"}

def call(method, path, body=None, headers=KEY, raw=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    data = raw if raw is not None else (json.dumps(body) if body is not None else None)
    c.request(method, path, body=data, headers={"Content-Type": "application/json", **headers})
    r = c.getresponse()
    text = r.read()
    c.close()
    return r.status, json.loads(text)

def complete(body):
    status, res = call("POST", "/v1/completions", body)
    assert status == 200, (status, res)
    return res

# -- the endpoints' shapes
s, h = call("GET", "/health", headers={})
assert s == 200 and h == {"status": "ok"}, h
s, info = call("GET", "/tokenizer_info")
assert s == 200 and info["eos_token"] == "</s>" and info["bos_token"] == "<s>" and info["model_max_length"] == 256, info
s, models = call("GET", "/v1/models")
assert s == 200 and models["object"] == "list" and models["data"][0]["object"] == "model", models
s, t = call("POST", "/tokenize", {"prompt": "Hello world</s>", "add_special_tokens": False})
assert s == 200 and t["tokens"][-1] == 2 and t["count"] == len(t["tokens"]), t
s, t2 = call("POST", "/tokenize", {"prompt": "Hello world"})
assert t2["tokens"][0] == 1 and t2["tokens"][1:] == t["tokens"][:-1], (t, t2)
s, d = call("POST", "/detokenize", {"tokens": t["tokens"][:-1]})
assert s == 200 and d["prompt"] == "Hello world", d
res = complete({"prompt": "ROMEO:", "max_tokens": 5, "temperature": 0})
assert res["object"] == "text_completion" and res["usage"]["completion_tokens"] <= 5, res
ch = res["choices"][0]
assert ch["index"] == 0 and isinstance(ch["text"], str) and ch["logprobs"] is None, ch
assert ch["finish_reason"] in ("length", "stop"), ch
res = complete({"prompt": "ROMEO:", "max_tokens": 0, "echo": True, "logprobs": 3})
lp = res["choices"][0]["logprobs"]
assert res["choices"][0]["text"] == "ROMEO:" and "".join(lp["tokens"]) == " ROMEO:", res  # not the BOS it added
assert all(len(x) == len(lp["tokens"]) for x in (lp["token_logprobs"], lp["top_logprobs"], lp["text_offset"]))
assert all(len(top) == 3 for top in lp["top_logprobs"]), lp
def offsets_ok(text, lp):  # each token's text stands where text_offset puts it, in characters
    offs, toks = lp["text_offset"], lp["tokens"]
    assert offs == sorted(offs) and all(0 <= o <= len(text) for o in offs), (offs, text)
    for o, t in zip(offs, toks):
        if t.startswith("bytes:") or t in ("<s>", "</s>"):
            continue
        if o == 0 and t.startswith(" ") and not text.startswith(" "):
            t = t[1:]  # the space SentencePiece drops at the start of a text
        assert text[o:o + len(t)] == t, (o, t, text, offs, toks)
    return True
offsets_ok("ROMEO:", lp)
for body in ({"prompt": "Café — naïve,\nthe  ROMEO: lines", "max_tokens": 0, "echo": True, "logprobs": 1},
             {"prompt": "ROMEO: the", "max_tokens": 8, "temperature": 0, "logprobs": 2},
             {"prompt": "ROMEO: the", "max_tokens": 8, "temperature": 0, "logprobs": 0, "echo": True}):
    ch = complete(body)["choices"][0]
    assert ch["logprobs"]["text_offset"][0] == 0 and offsets_ok(ch["text"], ch["logprobs"]), ch
res = complete({"prompt": [1, 1052], "max_tokens": 0, "echo": True, "logprobs": 1})
assert res["choices"][0]["logprobs"]["token_logprobs"][0] is None, res  # nothing precedes a prompt's own BOS
res = complete({"prompt": ["To be", "or not"], "max_tokens": 4, "temperature": 0, "n": 2, "stop": ["\n"]})
assert [c["index"] for c in res["choices"]] == [0, 1, 2, 3] and all("\n" not in c["text"] for c in res["choices"])
assert res["choices"][0]["text"] == res["choices"][1]["text"], res  # greedy: n copies agree
print("endpoints: ok")

# -- loglikelihoods: the harness's requests against rotor eval's samples
samples = [json.loads(l) for l in open(f"{out}/samples.jsonl")]
worst = 0
for i in range(0, len(samples), 5):
    batch = samples[i:i + 5]
    res = complete({"prompt": [s["tokens"][1:] for s in batch], "max_tokens": 1, "echo": True, "logprobs": 1,
                    "temperature": 0, "seed": 1234})
    for s, c in zip(batch, sorted(res["choices"], key=lambda c: c["index"])):
        ctxlen = len(s["tokens"]) - 1 - s["n_continuation"]
        lps, tops = c["logprobs"]["token_logprobs"][ctxlen:-1], c["logprobs"]["top_logprobs"][ctxlen:-1]
        assert len(lps) == s["n_continuation"], (len(lps), s)
        ll = sum(lps)
        greedy = all(t == max(top.values()) for t, top in zip(lps, tops))
        worst = max(worst, abs(ll - s["ll"]))
        assert abs(ll - s["ll"]) < 1e-4 and greedy == s["is_greedy"], (ll, greedy, s)
print(f"loglikelihoods: {len(samples)} requests as rotor eval's, max |difference| {worst:.2g}")

# -- generation: rotor generate's batch with the same seed
gen = [json.loads(l) for l in open(f"{out}/generated.jsonl")]
res = complete({"prompt": [g["prompt"] for g in gen], "max_tokens": 12, "temperature": 0.8, "top_k": 50, "seed": 7})
for g, c in zip(gen, res["choices"]):
    assert c["text"] == g["completion"], (c["text"], g["completion"])
print("generation: as rotor generate's")

# -- several clients at once
reqs = [{"prompt": [s["tokens"][1:]], "max_tokens": 1, "echo": True, "logprobs": 1, "temperature": 0}
        for s in samples[:6]] + [{"prompt": g["prompt"], "max_tokens": 6, "temperature": 0.8, "seed": k}
                                 for k, g in enumerate(gen)] + [
        {"prompt": [g["prompt"], "KING"][:k % 2 + 1], "max_tokens": 6, "temperature": 0} for k, g in enumerate(gen * 2)]
alone = [complete(r)["choices"] for r in reqs]
together = [None] * len(reqs)
def client(k):
    together[k] = complete(reqs[k])["choices"]
threads = [threading.Thread(target=client, args=(k,)) for k in range(len(reqs))]
for t in threads: t.start()
for t in threads: t.join()
def same(a, b):  # texts exactly; log-probabilities to 1e-5 (a batch's arithmetic differs in the last bits)
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) < 1e-5
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b
assert same(together, alone), "answers differ under concurrent clients"
print(f"{len(reqs)} concurrent clients: ok")

# -- sampled requests batched: five with their own seeds and settings queue behind a long
# greedy generation (another max_tokens: not in their batch), then run as one batch
burst = [{"prompt": [g["prompt"]] * (k % 2 + 1), "max_tokens": 5, "temperature": 0.5 + 0.2 * k, "top_k": 10 * k,
          "top_p": 1 - 0.05 * k, "seed": 100 + k} for k, g in enumerate((gen * 5)[:5])]
alone = [complete(r)["choices"] for r in burst]
together = [None] * len(burst)
def burst_client(k):
    together[k] = complete(burst[k])["choices"]
long_req = threading.Thread(target=complete, args=({"prompt": gen[0]["prompt"], "max_tokens": 150, "temperature": 0},))
long_req.start()
time.sleep(0.05)
threads = [threading.Thread(target=burst_client, args=(k,)) for k in range(len(burst))]
for t in threads: t.start()
for t in threads: t.join()
long_req.join()
assert same(together, alone), "sampled answers differ when batched"
print(f"{len(burst)} sampled requests at once: ok")

# -- bad input: 4xx naming the field or limit, and the server stays up. A body is JSON text
# (malformed on purpose) or a value sent as JSON.
bad = [
    ("POST", "/v1/completions", '{"prompt": "a", ', 400, "not valid JSON"),
    ("POST", "/v1/completions", [1, 2], 400, "JSON object"),
    ("POST", "/v1/completions", {"prompt": 12}, 400, "prompt"),
    ("POST", "/v1/completions", {"max_tokens": 3}, 400, "prompt is required"),
    ("POST", "/v1/completions", {"prompt": "a", "max_tokens": "many"}, 400, "max_tokens"),
    ("POST", "/v1/completions", {"prompt": "a", "max_tokens": 1000000000}, 400, "max_tokens"),
    ("POST", "/v1/completions", {"prompt": "a", "max_tokens": -1}, 400, "max_tokens"),
    ("POST", "/v1/completions", {"prompt": "a", "temperature": -1}, 400, "temperature"),
    ("POST", "/v1/completions", {"prompt": "a", "echo": "yes"}, 400, "echo"),
    ("POST", "/v1/completions", {"prompt": "a", "logprobs": 100}, 400, "logprobs"),
    ("POST", "/v1/completions", {"prompt": "a", "stream": True}, 400, "stream"),
    ("POST", "/v1/completions", {"prompt": "a", "stop": [1]}, 400, "stop"),
    ("POST", "/v1/completions", {"prompt": [5] * 300}, 400, "context is 256"),
    ("POST", "/v1/completions", {"prompt": [[5, 40000]]}, 400, "[0, 32000)"),
    ("POST", "/v1/completions", {"prompt": [[5, 6], "x"]}, 400, "prompt[1]"),
    ("POST", "/v1/completions", {"prompt": ["a"] * 9}, 400, "--max-prompts"),
    ("POST", "/v1/completions", {"prompt": ["a"] * 3, "n": 3}, 400, "--max-prompts"),
    ("POST", "/v1/completions", {"prompt": "a" * 70000}, 413, "--max-body"),
    ("POST", "/tokenize", {"text": "a"}, 400, "prompt"),
    ("POST", "/detokenize", {"tokens": [1, -3]}, 400, "tokens[1]"),
    ("GET", "/v1/completions", None, 405, "POST"),
    ("GET", "/v2/nothing", None, 404, "/v2/nothing"),
]
for method, path, body, status, words in bad:
    if body is not None and not isinstance(body, str):
        body = json.dumps(body)
    s, res = call(method, path, raw=body)
    msg = res["error"]["message"]
    assert s == status and words in msg, (path, body and body[:60], s, msg)
    assert call("GET", "/health", headers={})[0] == 200
s, res = call("POST", "/v1/completions", {"prompt": "a"}, headers={})
assert s == 401 and "Authorization" in res["error"]["message"], res
s, res = call("GET", "/v1/models", headers={"Authorization": "Bearer wrong"})
assert s == 401, res
# clients that leave: mid-body, and while their completion runs
for early in (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"prompt\": ",
              b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sekret\r\nContent-Length: 44\r\n\r\n"
              b"{\"prompt\": \"KING\", \"max_tokens\": 100, \"n\": 4}"):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(early)
    sock.close()
assert complete({"prompt": "KING", "max_tokens": 2})["choices"], "no answer after clients left"
print(f"bad input: {len(bad)} requests answered 4xx, API key required, clients leaving: ok")
PY

kill -TERM $pid
wait $pid
status=$?
[ $status = 0 ] || fail "SIGTERM: exit status $status"
grep -q "SIGTERM, stopping" "$out/serve.err" || fail "no SIGTERM message"
grep -Eq "requests \((5|[1-9][0-9]+) sampled\)" "$out/serve.err" ||
  fail "the five sampled requests queued together did not run as one batch: $(grep sampled "$out/serve.err" | tail -3)"
finish serve
