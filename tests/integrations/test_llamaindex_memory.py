"""MinisphereMemoryBlock inside LlamaIndex's own `Memory`: the messages Memory flushes out of
its short-term history are captured in the workspace, and a later question brings the
matching one back in the system message; over the sync handle and the async one."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory

from minisphere.integrations.llamaindex import MinisphereMemoryBlock

# a short-term budget of 20 words (half of 40) makes Memory flush the oldest turns
TOKEN_LIMIT = 40
CONVERSATION = [
    "My cat is called Pixel and she likes tuna",
    "Pixel sounds lovely",
    "I also own a bicycle named Rocket",
    "Rocket is a fine name",
    "Remind me what my cat likes to eat",
]
RECALLED = "Pixel and she likes tuna"  # what the last question brings back of the first turn


def memory_over(handle, session: str) -> Memory:
    return Memory.from_defaults(
        session_id=session,
        token_limit=TOKEN_LIMIT,
        chat_history_token_ratio=0.5,
        token_flush_size=10,
        tokenizer_fn=str.split,
        memory_blocks=[MinisphereMemoryBlock(workspace=handle)],
    )


def turns():
    return [
        ChatMessage(role="user" if i % 2 == 0 else "assistant", content=text)
        for i, text in enumerate(CONVERSATION)
    ]


def recalled_block(messages) -> str:
    system = [m.content for m in messages if m.role.value == "system"]
    return system[0] if system else ""


def converse(handle, session: str) -> str:
    """Memory over `handle` hears the conversation (flushing its first turns to the block)
    and is asked again: what the block recalled into the system message. The sync path."""
    memory = memory_over(handle, session)
    for message in turns():
        memory.put(message)
    return recalled_block(memory.get())


async def aconverse(handle, session: str) -> str:
    """`converse` over Memory's async path."""
    memory = memory_over(handle, session)
    await memory.aput_messages(turns())
    return recalled_block(await memory.aget())


def test_flushed_messages_are_captured_and_recalled_by_a_later_question(empty_live):
    assert RECALLED in converse(empty_live.ws, "sync")
    kept = [e.content for e in empty_live.ws.list_recent(tag="chat")]
    assert "user: My cat is called Pixel and she likes tuna" in kept
    assert all(e.kind == "episodic" for e in empty_live.ws.list_recent(tag="chat"))


def test_the_async_path_over_an_async_handle_captures_and_recalls(empty_live):
    async def scenario():
        async with empty_live.async_handle() as handle:
            return await aconverse(handle, "async")

    assert RECALLED in asyncio.run(scenario())
    assert len(empty_live.ws.list_recent(tag="chat")) >= 1


def test_a_get_with_no_words_to_ask_with_answers_empty(empty_live):
    block = MinisphereMemoryBlock(workspace=empty_live.ws)
    assert asyncio.run(block.aget([])) == ""
    assert asyncio.run(block.aget([ChatMessage(role="user", content="   ")])) == ""
    assert empty_live.ws.get_count() == 0
