"""Immutable replicas behind nginx, measured (issue 21): N `datasette serve -i` processes, one load balancer.

    python benchmarks/replicas.py DB [--replicas 1 2] [--seconds 20] [--connections 8]

For each N: N Datasette processes on loopback serving the same file immutably, nginx (Debian's package) in front
with a round-robin `upstream`, and wrk (Debian's package) as the load, one thread, with a fixed mix of questions
to /-/context_for.json. In the same run and through the same nginx: `select 1` (/DB.json?sql=select+1), the floor
of Datasette plus nginx; and the questions again with nginx's proxy_cache on (our answers from an immutable file
are cacheable: ETag and Cache-Control). Prints requests/s, p50 and p99 for each.

nginx and wrk are found on PATH or installed with apt-get (as root); where neither works the script says so and
exits 0. On a 2-core machine the load generator and nginx share the cores with the replicas: read the numbers
against the select 1 floor of the same N.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

QUESTIONS = ["Who is Vaust Hadrinel?", "Where is Blackwater Crossing?", "What happened in session 9?",
             "Who leads the Ashen Vanguard?", "What is the Embermoon Surge?", "Who is Kraya Feldrum?",
             "Where is Mangagoy?", "What is the Velvet Lantern?"]


def tools() -> bool:
    """nginx and wrk on PATH, installing them when possible."""
    if shutil.which("nginx") and shutil.which("wrk"):
        return True
    if os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "-qq", "nginx-light", "wrk"], check=False,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}, stdout=subprocess.DEVNULL)
    return bool(shutil.which("nginx") and shutil.which("wrk"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=5).read()
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"{url} did not answer")


NGINX = """daemon off;
{user}
worker_processes 1;
error_log {work}/error.log;
pid {work}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {work}/body; proxy_temp_path {work}/proxy; fastcgi_temp_path {work}/fcgi;
  uwsgi_temp_path {work}/uwsgi; scgi_temp_path {work}/scgi;
  proxy_cache_path {work}/cache keys_zone=okf:10m;
  upstream replicas {{ {servers} keepalive 32; }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://replicas;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      {cache}
    }}
  }}
}}
"""

LUA = """local paths = {{ {paths} }}
local n = 0
request = function()
  n = n + 1
  return wrk.format("GET", paths[(n % #paths) + 1])
end
"""


def wrk(url: str, paths: list[str], seconds: int, connections: int, work: Path) -> dict[str, float]:
    script = work / "mix.lua"
    script.write_text(LUA.format(paths=", ".join(json.dumps(p) for p in paths)))
    out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", str(script), url],
                         capture_output=True, text=True, check=True).stdout

    def ms(label: str) -> float:
        value, unit = re.search(rf"^\s+{label}%\s+([\d.]+)(us|ms|s)\s*$", out, re.MULTILINE).groups()
        return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]

    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)), "p50": ms("50"), "p99": ms("99"),
            "errors": int(errors.group(1)) if errors else 0}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db", type=Path)
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--connections", type=int, default=8)
    args = parser.parse_args()
    if not tools():
        print("nginx and wrk are not available (apt-get install nginx-light wrk): skipped")
        return
    name = args.db.stem
    questions = ["/-/context_for.json?" + urllib.parse.urlencode({"q": q}) for q in QUESTIONS]
    floor = [f"/{name}.json?sql=select+1"]
    print(f"{args.db} ({os.cpu_count()} cores), wrk 1 thread {args.connections} connections {args.seconds} s each")
    print(f"{'replicas':>8}  {'endpoint':24} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>6}")
    for count in args.replicas:
        work = Path(tempfile.mkdtemp(prefix="replicas-"))
        ports = [free_port() for _ in range(count)]
        replicas = [subprocess.Popen([sys.executable, "-m", "datasette", "serve", "-i", str(args.db), "--host",
                                      "127.0.0.1", "--port", str(port)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL) for port in ports]
        try:
            for port in ports:
                wait_for(f"http://127.0.0.1:{port}/-/versions.json")
                for path in questions:  # each replica loads the model and caches the question vectors
                    urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=120).read()
            for label, paths, cache in (("select 1", floor, ""), ("context_for", questions, ""),
                                        ("context_for, nginx cache", questions,
                                         "proxy_cache okf; proxy_cache_valid 200 5m;")):
                port = free_port()
                config = work / "nginx.conf"
                config.write_text(NGINX.format(work=work, port=port, cache=cache,
                                               user="user root;" if os.geteuid() == 0 else "",  # its temp folder
                                               servers=" ".join(f"server 127.0.0.1:{p};" for p in ports)))
                nginx = subprocess.Popen(["nginx", "-c", str(config), "-p", str(work)])
                try:
                    try:
                        wait_for(f"http://127.0.0.1:{port}{floor[0]}")
                    except SystemExit:
                        print((work / "error.log").read_text()[-2000:])
                        raise
                    found = wrk(f"http://127.0.0.1:{port}", paths, args.seconds, args.connections, work)
                finally:
                    nginx.terminate()
                    nginx.wait(timeout=10)
                print(f"{count:>8}  {label:24} {found['rps']:8.1f} {found['p50']:8.1f} {found['p99']:8.1f} "
                      f"{found['errors']:>6}")
        finally:
            for replica in replicas:
                replica.terminate()
                replica.wait(timeout=10)
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
