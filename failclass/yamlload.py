"""The fastest safe YAML loader available (libyaml's C loader when PyYAML was built with it)."""

import yaml

SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
