"""Google ADK's own tests with hookreg attached to every runner (see runner.py for what each name means).

google-adk's sdist and wheel ship no tests: ``HOOKREG_GOOGLE_ADK_TESTS`` names a checkout of google/adk-python
(see docs/adapters/google-adk.md, "Its own tests with hookreg attached"). The tree these files were chosen from, and
checked against 2.13.0, is that repository's ``tests/`` and ``pyproject.toml`` (its pytest options) at commit
4006fe408c583bffd95c23455f00184baa4fad6d (main, 29 May 2026, version 2.0.0: the newest commit whose whole tree was
at hand; 2.13.0's own was not), plus ``tests/unittests/runners/test_runner_error_callbacks.py`` at commit
88e4268c4168256738ff95953b3573617c93c886, which that tree predates. Newer versions of some files below exist, but
those seen test what 2.13.0 does not have (``on_model_request_callback``, say), so the 2.0.0 ones stay. Each file
below passes against 2.13.0 without hookreg, but for 11 tests that fail in every mode: they test 2.0.0's internals.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hookreg import HookRegistry

DIST = "google-adk"
TESTS_FROM = "HOOKREG_GOOGLE_ADK_TESTS"
# What the files below import beyond google-adk itself (pytest-asyncio runs them: asyncio_mode = "auto").
TEST_REQUIREMENTS = ["pytest-asyncio>=0.25", "pytest-mock>=3.14"]
_T = "tests/unittests"
# Every file whose tests run a Runner, where hookreg's plugin sits among the app's plugins: the runner itself
# (test_runners, runs paused and resumed, ADK's tool confirmation, runs that fail: on_run_error_callback),
# a Runner driving a workflow node rather than an agent (test_runner_node), the agent loop with its tools — simple,
# parallel, sequential, long-running, failing in parallel — (test_functions_*), the agent's own tool and model
# callbacks, which run after a plugin's (test_tool_callbacks, test_model_callbacks, test_llm_agent_callbacks,
# test_model_callback_chain), other plugins beside hookreg's (test_plugin_model_callbacks, the reflect-and-retry
# plugin, which answers failed tool calls itself), SSE streaming (test_progressive_sse_streaming) and live runs
# (streaming/), agents run as tools by a runner of their own (test_agent_tool), agent transfer, interruptions,
# resumable agents and workflows (workflow/). The tests that drive ADK's PluginManager, an InvocationContext or a
# tool directly, without a Runner (test_plugin_manager, test_plugin_tool_callbacks, test_async_tool_callbacks, most
# of test_function_tool), are left out: a user attaches hookreg to an app, so it cannot be attached there and they
# would pass three times over, telling nothing. Left out too: streaming/test_streaming.py (after its live tests the
# interpreter crashes in every mode), test_functions_thread_pool.py and test_functions_request_euc.py (they test
# 2.0.0's internals and fail without hookreg).
FILES = [
    f"{_T}/test_runners.py",
    f"{_T}/runners/test_runner_node.py",
    f"{_T}/runners/test_pause_invocation.py",
    f"{_T}/runners/test_resume_invocation.py",
    f"{_T}/runners/test_run_tool_confirmation.py",
    f"{_T}/runners/test_runner_error_callbacks.py",
    f"{_T}/flows/llm_flows/test_functions_simple.py",
    f"{_T}/flows/llm_flows/test_functions_parallel.py",
    f"{_T}/flows/llm_flows/test_functions_parallel_error.py",
    f"{_T}/flows/llm_flows/test_functions_sequential.py",
    f"{_T}/flows/llm_flows/test_functions_long_running.py",
    f"{_T}/flows/llm_flows/test_tool_callbacks.py",
    f"{_T}/flows/llm_flows/test_model_callbacks.py",
    f"{_T}/flows/llm_flows/test_plugin_model_callbacks.py",
    f"{_T}/flows/llm_flows/test_llm_callback_span_consistency.py",
    f"{_T}/flows/llm_flows/test_progressive_sse_streaming.py",
    f"{_T}/flows/llm_flows/test_other_configs.py",
    f"{_T}/plugins/test_reflect_retry_tool_plugin.py",
    f"{_T}/agents/test_llm_agent_callbacks.py",
    f"{_T}/agents/test_model_callback_chain.py",
    f"{_T}/agents/test_llm_agent_include_contents.py",
    f"{_T}/agents/test_llm_agent_interruptions.py",
    f"{_T}/agents/test_resumable_llm_agent.py",
    f"{_T}/tools/test_agent_tool.py",
    f"{_T}/streaming/test_multi_agent_streaming.py",
    f"{_T}/streaming/test_live_streaming_configs.py",
    f"{_T}/workflow/test_agent_transfer.py",
    f"{_T}/workflow/test_task_api_e2e.py",
    f"{_T}/workflow/test_workflow.py",
    f"{_T}/workflow/test_workflow_dynamic_nodes.py",
    f"{_T}/workflow/test_workflow_node_timeout.py",
    f"{_T}/workflow/test_workflow_output_deduplication.py",
]
# What .ci/run runs when a checkout is named (its three runs take under a minute on 2 cores, FILES about 1.5): the
# files that found divergences (test_tool_callbacks: an agent's on_tool_error_callback and before_tool_callback after
# hookreg's; test_functions_parallel_error: a tool error that must reach the caller; test_reflect_retry_tool_plugin: a
# plugin answering failed calls after hookreg; test_run_tool_confirmation: ADK's own confirmation, whose error result
# hookreg rewrote; test_runner_node: a runner without an agent), the runner and the app it keeps (test_runners), the
# tool loop, plugins answering model calls, SSE streaming and failing runs.
SUBSET = [
    f"{_T}/flows/llm_flows/test_tool_callbacks.py",
    f"{_T}/flows/llm_flows/test_functions_parallel_error.py",
    f"{_T}/plugins/test_reflect_retry_tool_plugin.py",
    f"{_T}/runners/test_run_tool_confirmation.py",
    f"{_T}/runners/test_runner_node.py",
    f"{_T}/test_runners.py",
    f"{_T}/flows/llm_flows/test_functions_simple.py",
    f"{_T}/flows/llm_flows/test_plugin_model_callbacks.py",
    f"{_T}/flows/llm_flows/test_progressive_sse_streaming.py",
    f"{_T}/runners/test_runner_error_callbacks.py",
]
PYTEST_ARGS: list[str] = []
KNOWN: dict[str, str] = {}


def inject(registry: HookRegistry) -> None:
    """Every `Runner` runs its app with a `HookregPlugin` for `registry` after the app's own plugins.

    What a user writes, ``App(..., plugins=[..., HookregPlugin(registry)])`` (or the deprecated
    ``Runner(agent=..., plugins=[...])``), done where the runner resolves its app: the app the test built gets the
    plugin, once however many runners it serves, and stays the runner's ``app``.
    """
    # imported here, not above: the off run loads this module too, and must run without hookreg
    from google.adk.runners import Runner

    from hookreg.adapters.google_adk import HookregPlugin

    original = Runner._resolve_app

    @functools.wraps(original)
    def resolve(*args: Any, **kwargs: Any) -> Any:
        app = original(*args, **kwargs)
        if not any(isinstance(plugin, HookregPlugin) for plugin in app.plugins):
            app.plugins = [*app.plugins, HookregPlugin(registry)]
        return app

    Runner._resolve_app = staticmethod(resolve)  # type: ignore[method-assign]  # the injection itself
