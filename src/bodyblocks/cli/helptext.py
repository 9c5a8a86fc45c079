"""Help text filled in when it is shown: `{extractors}` in an option's help becomes every extractor name the
registry knows (loading/registry.extractor_names), so no command keeps a list of its own and a command that
only parses its arguments does not import the registry."""

from __future__ import annotations

import argparse


class RegistryHelp(argparse.HelpFormatter):
    """argparse's formatter, with `{extractors}` replaced in help strings by the registry's names."""

    def _expand_help(self, action: argparse.Action) -> str:
        text = super()._expand_help(action)
        if "{extractors}" in text:
            from bodyblocks.loading.registry import extractor_names

            text = text.replace("{extractors}", ", ".join(extractor_names()))
        return text
