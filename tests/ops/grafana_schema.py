"""The dashboard checked against Grafana's own schema: the TypeScript types that
@grafana/schema (npm) generates from Grafana's CUE schema, by the TypeScript compiler.
The dashboard and each panel's options become typed constants: a key the schema does not
have, a value of the wrong type or outside an enum is a compile error. `make test`
installs both packages under .venv/node."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

NODE_PREFIX = Path(__file__).resolve().parents[2] / ".venv/node"
TSC = NODE_PREFIX / "node_modules/.bin/tsc"
SCHEMA = "@grafana/schema/dist/esm/raw"
PANEL_OPTIONS = {  # panel type -> its options type in @grafana/schema
    "timeseries": ("TimeSeries", "composable/timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen"),
    "stat": ("Stat", "composable/stat/panelcfg/x/StatPanelCfg_types.gen"),
    "table": ("Table", "composable/table/panelcfg/x/TablePanelCfg_types.gen"),
    "bargauge": ("BarGauge", "composable/bargauge/panelcfg/x/BarGaugePanelCfg_types.gen"),
}
# Every field may be left out (Grafana fills defaults), none may be unknown, and a string
# enum accepts its values as JSON spells them.
LOOSE = """type Loose<T> = T extends string ? `${T}` : T extends number | boolean | null | undefined ? T
  : T extends Array<infer U> ? Array<Loose<U>> : T extends object ? { [K in keyof T]?: Loose<T[K]> } : T;"""


def typescript_of(dashboard: dict[str, Any]) -> str:
    imports = [f'import type {{ Dashboard }} from "{SCHEMA}/dashboard/x/Dashboard_types.gen";']
    imports += [f'import type {{ Options as {name} }} from "{SCHEMA}/{path}";' for name, path in PANEL_OPTIONS.values()]
    body = [
        "export const dashboard: Loose<Dashboard> & Pick<Dashboard, 'schemaVersion'> & { title: string; uid: string } = "
        + json.dumps(dashboard, indent=1)
        + ";"
    ]
    for panel in dashboard["panels"]:
        if panel["type"] != "row":
            name = PANEL_OPTIONS[panel["type"]][0]
            body.append(f"export const options_{panel['id']}: Loose<{name}> = {json.dumps(panel['options'])};")
    return "\n".join([*imports, LOOSE, *body]) + "\n"


def compile_errors(dashboards: dict[str, dict[str, Any]], workdir: Path) -> dict[str, list[str]]:
    """tsc's complaints about each dashboard by name (none when it fits the schema), from
    one run of the compiler over them all."""
    for name, dashboard in dashboards.items():
        (workdir / f"{name}.ts").write_text(typescript_of(dashboard))
    (workdir / "node_modules").symlink_to(NODE_PREFIX / "node_modules")  # where the imports resolve
    options = ["--noEmit", "--strict", "--target", "es2022", "--module", "esnext", "--moduleResolution", "bundler"]
    done = subprocess.run(
        [str(TSC), *options, *(f"{name}.ts" for name in dashboards)],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    errors: dict[str, list[str]] = {name: [] for name in dashboards}
    for line in done.stdout.splitlines():
        name, _, rest = line.partition(".ts(")
        if name in errors and "error TS" in rest:
            errors[name].append(rest)
    assert done.returncode == 0 or any(errors.values()), done.stdout + done.stderr  # tsc failed otherwise
    return errors
