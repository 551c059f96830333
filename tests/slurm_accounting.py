"""A real Slurm with accounting and GPUs, for recording what ``sacct --json`` and
``scontrol show job -d`` print about GPU jobs: tests/slurm_cluster.py's daemons plus a
private MariaDB (its own data folder and port) and slurmdbd, and nodes whose GPUs are
GRES over tty devices (``File=/dev/ttyN``: Slurm hands out and prints their indices as
for real GPUs; nothing runs on them). Facts found setting it up (Debian's 22.05.8):
sacctmgr and slurmctld reach slurmdbd through ``AccountingStoragePass=<munge socket>``
(else the default socket); ``gres.conf`` needs one ``File=`` line per device (the range
form ``/dev/tty[0-3]`` allocated no GPUs, printing ``GRES=gpu:a100:0(IDX:)``)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from slurm_cluster import Slurm, node_line

PACKAGES = ("slurm-wlm", "munge", "slurmdbd", "mariadb-server")


def ensure_accounting() -> str | None:
    """None when slurmdbd and MariaDB are there, else why not (after trying apt-get as root)."""
    if all(shutil.which(tool) for tool in ("slurmctld", "slurmdbd", "munged", "mariadbd", "mariadb-install-db")):
        return None
    done = subprocess.run(["apt-get", "install", "-y", *PACKAGES], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"apt-get install {' '.join(PACKAGES)} failed: {done.stderr.strip()[-300:]}"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class AccountingSlurm(Slurm):
    """Nodes node1..nodeN with ``gpus`` GPUs each (type a100), accounting in slurmdbd."""

    def __init__(self, base: Path, nodes: int = 2, gpus: int = 4) -> None:
        super().__init__(base, nodes, port=free_port())
        self.gpus = gpus
        self.dbd_port, self.db_port = free_port(), free_port()
        self.node_ports = [free_port() for _ in self.nodes]

    def write_config(self) -> None:
        for folder in ("etc", "state", "jobs", "db", *(f"spool/{node}" for node in self.nodes)):
            (self.base / folder).mkdir(parents=True, exist_ok=True)
        munge, b = self.munge / "munge.sock", self.base
        hardware = node_line()
        nodes = "\n".join(
            f"NodeName={n} NodeHostname={self.host} NodeAddr=127.0.0.1 Port={p} {hardware} Gres=gpu:a100:{self.gpus} State=UNKNOWN"
            for n, p in zip(self.nodes, self.node_ports, strict=False)
        )
        self.conf.write_text(
            f"ClusterName=failclass\nSlurmctldHost={self.host}(127.0.0.1)\nSlurmctldPort={self.port}\n"
            f"AuthType=auth/munge\nAuthInfo=socket={munge},cred_expire=5\nSlurmUser=root\n"
            f"StateSaveLocation={b}/state\nSlurmdSpoolDir={b}/spool/%n\nSlurmctldPidFile={b}/slurmctld.pid\n"
            f"SlurmdPidFile={b}/slurmd-%n.pid\nSlurmctldLogFile={b}/slurmctld.log\nSlurmdLogFile={b}/slurmd-%n.log\n"
            "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
            "MailProg=/bin/true\nSchedulerParameters=sched_interval=1,bf_interval=1\nReturnToService=2\nMinJobAge=600\n"
            "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nGresTypes=gpu\n"
            f"AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost=localhost\n"
            f"AccountingStoragePort={self.dbd_port}\nAccountingStoragePass={munge}\nAccountingStorageTRES=gres/gpu\n"
            f"{nodes}\nPartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n"
        )
        names = f"node[1-{len(self.nodes)}]" if len(self.nodes) > 1 else self.nodes[0]
        (b / "etc" / "gres.conf").write_text(
            "".join(f"NodeName={names} Name=gpu Type=a100 File=/dev/tty{i}\n" for i in range(self.gpus))
        )
        dbd = b / "etc" / "slurmdbd.conf"
        dbd.write_text(
            f"AuthType=auth/munge\nAuthInfo=socket={munge}\nDbdHost=localhost\nDbdAddr=127.0.0.1\nDbdPort={self.dbd_port}\n"
            f"SlurmUser=root\nPidFile={b}/slurmdbd.pid\nLogFile={b}/slurmdbd.log\n"
            f"StorageType=accounting_storage/mysql\nStorageHost=127.0.0.1\nStoragePort={self.db_port}\n"
            "StorageUser=slurm\nStoragePass=slurm\nStorageLoc=slurm_acct_db\n"
        )
        dbd.chmod(0o600)

    def start(self) -> None:
        self.start_munge()
        self._start_database()
        self._spawn("slurmdbd", ["slurmdbd", "-D"])
        self._wait(lambda: self.run("sacctmgr", "-n", "list", "cluster", check=False).returncode == 0, "slurmdbd")
        self.run("sacctmgr", "-i", "add", "cluster", "failclass")
        self.start_daemons()

    def _start_database(self) -> None:
        db = self.base / "db"
        subprocess.run(
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={db}",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ],
            capture_output=True,
            check=True,
        )
        sock = self.base / "mysql.sock"
        self._spawn(
            "mariadbd",
            [
                "mariadbd",
                "--no-defaults",
                f"--datadir={db}",
                f"--socket={sock}",
                f"--port={self.db_port}",
                "--bind-address=127.0.0.1",
                "--user=root",
                f"--pid-file={self.base / 'mysql.pid'}",
            ],
        )
        grant = "CREATE USER 'slurm'@'{h}' IDENTIFIED BY 'slurm'; GRANT ALL ON *.* TO 'slurm'@'{h}';"
        sql = grant.format(h="127.0.0.1") + grant.format(h="localhost")
        client = ["mariadb", "--no-defaults", "-S", str(sock), "-u", "root", "-e", sql]
        self._wait(lambda: subprocess.run(client, capture_output=True, check=False).returncode == 0, "mariadbd")

    def _spawn(self, name: str, command: list[str]) -> None:
        log = (self.base / f"{name}.out").open("wb")
        self.daemons.append(
            subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.env, start_new_session=True
            )
        )

    def _wait(self, ready: Callable[[], bool], what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not come up: see {self.base}")
            time.sleep(0.5)
