#!/usr/bin/env python3
"""tern's counts against a real llama-server, request kind by request kind.
usage: LLAMA_SERVER=path/to/llama-server MODEL=model.gguf [CHAT=colorsys.py] \
       benches/llama-check.py TERN_BINARY WINDOW [TURNS]
Starts llama-server (-c WINDOW, -np 1, -t 1) on 127.0.0.1:8181, runs up to 12 headless
turns (`tern --json --yes -m ...`, resumed) in a temporary repository holding files of
Python's standard library (CHAT is the chat file), and prints, per request kind, what
tern predicted against what the server reported (tern's `drift` events), whether any
request's prompt + max_tokens passed the window, and how turns ended.
The README's local-models section says how to build llama-server and get a model."""
import json, os, shutil, subprocess, sys, tempfile, time, urllib.request, sysconfig, statistics

def report(path):
    d = json.load(open(path)); ev = d["events"]
    drift = [e for e in ev if e["event"] == "drift"]
    req = [e for e in ev if e["event"] == "request"]
    window = next((e.get("window") for e in reversed(ev) if e["event"] == "budget"), None)
    print(f"== {path}: window {window}, {len(req)} requests, {len(drift)} drift reports")
    rows = {}
    for e in drift:
        p, r = e["predicted_prompt_tokens"], e["reported_prompt_tokens"]
        err = (p - r) / r * 100 if r else 0.0
        rows.setdefault(e["purpose"], []).append((p, r, err, e.get("margin"), e.get("beyond_margin"), json.dumps(e.get("counting"))))
    for k, rs in rows.items():
        errs = [abs(x[2]) for x in rs]
        print(f"  {k:15} n={len(rs):2} median |err| {statistics.median(errs):5.2f}%  max {max(errs):5.2f}%  beyond margin {sum(1 for x in rs if x[4])}  labels {sorted(set(x[5] for x in rs))}")
        for x in rs:
            print(f"      predicted {x[0]:5} reported {x[1]:5} err {x[2]:+6.2f}% margin {x[3]} beyond {x[4]}")
    over = [(e.get("purpose"), e["predicted_prompt_tokens"], e.get("max_tokens")) for e in req if window and e["predicted_prompt_tokens"] + (e.get("max_tokens") or 0) > window]
    print(f"  requests whose predicted prompt + max_tokens passed the window: {len(over)} {over[:5]}")
    fails = [e.get("error", "")[:150] for e in ev if e["event"] == "turn_failed"]
    fin = [e.get("finish") for e in ev if e["event"] == "turn_finished"]
    print(f"  turn_finished: {len(fin)} finishes {sorted(set(json.dumps(f) for f in fin))}")
    print(f"  turn_failed: {len(fails)}"); [print("     ", f) for f in fails]


tern, window = sys.argv[1], int(sys.argv[2])
turns = int(sys.argv[3]) if len(sys.argv) > 3 else 12
server_bin, model = os.environ["LLAMA_SERVER"], os.environ["MODEL"]
port = 8181
log = open(f"/tmp/llama-server-{window}.log", "w")
srv = subprocess.Popen([server_bin, "-m", model, "-c", str(window), "-np", "1", "-t", "1",
                        "--host", "127.0.0.1", "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
try:
    for _ in range(120):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
            break
        except Exception:
            time.sleep(0.5)
    repo = tempfile.mkdtemp(prefix="handcheck-")
    lib = sysconfig.get_paths()["stdlib"]
    chat = os.environ.get("CHAT", "colorsys.py")
    for f in {"textwrap.py", "shlex.py", "fnmatch.py", "colorsys.py", chat}:
        shutil.copy(os.path.join(lib, f), repo)
    env = dict(os.environ, OPENAI_API_KEY="sk-local", TERN_STATE_DIR=os.path.join(repo, ".state"),
               XDG_CONFIG_HOME=os.path.join(repo, ".cfg"), XDG_CACHE_HOME=os.path.join(repo, ".cache"))
    subprocess.run("git init -q && git add -A && git -c user.name=h -c user.email=h@x commit -qm lib",
                   shell=True, cwd=repo, check=True)
    messages = [f"/ask what does the first function in {chat} return?",
                f"add a one-line comment above the first function in {chat} saying what it does",
                "/ask summarize fnmatch.translate in two sentences",
                f"add a docstring to the last function in {chat}",
                f"/ask which function in {chat} is the shortest?",
                f"add a comment at the top of {chat} saying it is a test copy",
                f"/ask what does the second function in {chat} do?",
                "/tokens",
                f"/ask is there a bug in {chat}?",
                f"rename one local variable in {chat} to a clearer name",
                "/ask what would you rename next?",
                "/ask thanks, anything else?"]
    events = []
    base = [tern, "--json", "--yes", "--api-base", f"http://127.0.0.1:{port}/v1", "--model", "smol",
            "--weak-model", "smol"]
    for i, m in enumerate(messages[:turns]):
        args = base + (["--resume"] if i else []) + ["-m", m] + ([] if i else [chat])
        p = subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True, timeout=900)
        for line in p.stdout.splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            e["_turn"] = i + 1
            events.append(e)
        print(f"turn {i+1} exit {p.returncode}: {m}", file=sys.stderr)
        if p.returncode not in (0, 1):
            print(p.stderr[-2000:], file=sys.stderr)
    out = f"/tmp/llama-check-{window}.json"
    json.dump({"events": events}, open(out, "w"))
    report(out)
finally:
    srv.terminate()
    srv.wait()
