"""`failclass hook slurm-install DIR`: the files Slurm runs, with this installation's paths
written in (slurmctld runs them with an almost empty environment)."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

EPILOG = """#!/bin/sh
# EpilogSlurmctld: after every job, failclass decides and acts (requeue, hold, comment).
set -a
. {env}
set +a
exec {failclass} hook slurm-epilog >> {log} 2>&1
"""

JOB_SUBMIT = """-- job_submit.lua written by `failclass hook slurm-install`: refuses a job whose batch
-- script declares (#FAILCLASS inputs /path ...) a blacklisted input, or whose user is on
-- hold for a failure the job would repeat. Put it beside slurm.conf; JobSubmitPlugins=lua.
local FAILCLASS = {failclass}
local ENV = {env}

local function quote(text)
  return "'" .. string.gsub(text, "'", "'\\\\''") .. "'"
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  local script = job_desc.script or ""
  local args = ""
  for rest in string.gmatch(script, "#FAILCLASS%s+inputs%s+([^\\n]+)") do
    for path in string.gmatch(rest, "%S+") do
      args = args .. " --input " .. quote(path)
    end
  end
  if args == "" then
    return slurm.SUCCESS
  end
  local user = job_desc.user_name or ("uid-" .. tostring(submit_uid))
  local name = job_desc.name or "unnamed"
  local command = "set -a; . " .. quote(ENV) .. "; set +a; " .. quote(FAILCLASS) ..
    " hook admit --json --job-id " .. quote(name) .. " --user " .. quote(user) .. args .. " 2>&1"
  local handle = io.popen(command)
  local answer = handle:read("*a")
  handle:close()
  local action = string.match(answer, '"action": "([%w_]+)"')
  local enforced = string.find(answer, '"enforced": true', 1, true) ~= nil
  if enforced and (action == "reject" or action == "hold") then
    local message = string.match(answer, '"message": "(.-)"') or action
    slurm.log_user("failclass: " .. action .. ": " .. message)
    return slurm.ERROR
  end
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end

return slurm.SUCCESS
"""


def lua_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def install(directory: Path, settings: dict[str, str], slurm_conf: Path) -> list[Path]:
    """Write the env file, the epilog script and job_submit.lua into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    failclass = shutil.which("failclass") or str(Path(sys.executable).with_name("failclass"))
    env = directory / "failclass.env"
    lines = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SLURM_CONF": str(slurm_conf), **settings}
    env.write_text("".join(f"{key}={shlex.quote(value)}\n" for key, value in lines.items()))
    env.chmod(0o600)
    epilog = directory / "failclass-epilog.sh"
    epilog.write_text(
        EPILOG.format(
            env=shlex.quote(str(env)), failclass=shlex.quote(failclass), log=shlex.quote(str(directory / "failclass-hook.log"))
        )
    )
    epilog.chmod(0o755)
    job_submit = directory / "job_submit.lua"
    job_submit.write_text(JOB_SUBMIT.format(failclass=lua_string(failclass), env=lua_string(str(env))))
    return [env, epilog, job_submit]
