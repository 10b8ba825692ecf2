"""Python SDK for writing capicua bots.

Write one method and run it::

    from capicua.client import Bot, run_bot

    class FirstBot(Bot):
        def choose(self, observation, legal_actions):
            return legal_actions[0]

    run_bot(FirstBot())  # $CAPICUA_SERVER (default 127.0.0.1:50051), $CAPICUA_BOT_TOKEN

or from the command line: ``capicua bot run mybot:FirstBot``. See docs/writing-a-bot.md.
"""

from capicua.common.channel import ClientTLS

from .bot import (
    Bot,
    BotAnswerError,
    Decision,
    PlayError,
    as_bot,
    current_decision,
)
from .launch import Launched, LaunchError, launch_server, new_admin_token
from .lobby import Lobby, LobbyError, ServerUnavailable, SyncLobby, TokenRefused
from .session import Backoff, ClientError, Session, Summary, run, run_bot

__all__ = [
    "Backoff",
    "Bot",
    "BotAnswerError",
    "ClientError",
    "ClientTLS",
    "Decision",
    "LaunchError",
    "Launched",
    "Lobby",
    "LobbyError",
    "PlayError",
    "ServerUnavailable",
    "Session",
    "Summary",
    "SyncLobby",
    "TokenRefused",
    "as_bot",
    "current_decision",
    "launch_server",
    "new_admin_token",
    "run",
    "run_bot",
]
