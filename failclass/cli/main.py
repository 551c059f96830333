"""The `failclass` command: its global options and every command group."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import click

from failclass.cli.analytics import report, simulate
from failclass.cli.batch import batch
from failclass.cli.classify import classify
from failclass.cli.common import StoreProblem
from failclass.cli.diff import diff
from failclass.cli.hook import hook
from failclass.cli.model import evaluate_command, label, train
from failclass.cli.notify import notify
from failclass.cli.policy import policy
from failclass.cli.rules import rules
from failclass.cli.serve import db, serve, token
from failclass.cli.waste import waste
from failclass.cli.watch import watch_command
from failclass.options import ClassifierOptions
from failclass.store import StoreUnavailable


class Failclass(click.Group):
    """The root group: whichever command meets a store it cannot open or use ends with
    one line naming the store and the cause, exit status 3; its classifier options are
    accepted after the command too (`failclass classify --no-model LOG` as
    `failclass --no-model classify LOG`)."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except StoreUnavailable as exc:
            raise StoreProblem(str(exc)) from None

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, self.options_first(ctx, args))

    def options_first(self, ctx: click.Context, args: list[str]) -> list[str]:
        """``args`` with this group's own options (and their values) moved in front; "--"
        ends the options, as everywhere."""
        takes_value = {
            name: not param.is_flag
            for param in self.params
            if isinstance(param, click.Option) and not param.is_eager
            for name in param.opts
        }
        front: list[str] = []
        rest: list[str] = []
        index = 0
        while index < len(args):
            arg = args[index]
            name, equals, _ = arg.partition("=")
            if arg == "--":
                rest += args[index:]
                break
            if name not in takes_value:
                rest.append(arg)
            elif takes_value[name] and not equals:
                if index + 1 == len(args):
                    raise click.BadOptionUsage(name, f"Option '{name}' requires an argument.", ctx)
                front += args[index : index + 2]
                index += 1
            else:
                front.append(arg)
            index += 1
        return front + rest


@click.group(cls=Failclass)
@click.version_option(package_name="failclass", prog_name="failclass")
@click.option(
    "--rules-dir",
    "rules_dirs",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="An extra folder of rule files, loaded after the built-in ones (repeatable; also FAILCLASS_RULES_DIR).",
)
@click.option(
    "--model",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The fallback model (a .npz with its .json); default the built-in one, or FAILCLASS_MODEL.",
)
@click.option("--no-model", is_flag=True, help="Rules only: do not load the fallback model.")
@click.option(
    "--model-threshold",
    type=click.FloatRange(0, 1),
    help="Answer with the model from this confidence on (default: the threshold chosen by `train`).",
)
@click.pass_context
def main(
    ctx: click.Context, rules_dirs: tuple[Path, ...], model: Path | None, no_model: bool, model_threshold: float | None
) -> None:
    """failclass: name why a GPU training attempt failed, from its logs.

    These options may also follow the command: `failclass classify --no-model LOG`."""
    # Each line reaches a pipe when it is written: long-running commands (the Kubernetes
    # controller, watch, serve) are read while they run, not when they exit.
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)
    ctx.obj = ClassifierOptions(tuple(rules_dirs), model, no_model, model_threshold)


hook.add_command(watch_command, "idle-watch")  # the same command, where schedulers look for their side

for command in (
    classify,
    diff,
    rules,
    policy,
    train,
    evaluate_command,
    label,
    report,
    simulate,
    batch,
    serve,
    db,
    token,
    hook,
    waste,
    notify,
):
    main.add_command(command)

if __name__ == "__main__":
    main()
