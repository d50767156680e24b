"""The room board: a JupyterHub service the hub starts (deploy/board/hub_config.py), for the instructor only.

The hub routes ``/services/board/`` through its proxy to this process. The page and its API take the hub's OAuth
(``HubOAuthenticated``): only a user holding ``access:services!service=board`` gets in, which the hub's admin role
has and an attendee's does not. Attendees' kernels post their checks to ``api/events`` with their own hub token
(vnetlab/room.py); the board asks the hub whose token it is (``HubAuth.user_for_token``), so the name on an event is
the hub's, never one a kernel claims. Events go to SQLite in the hub's state folder (store.py); the page polls
``api/state`` every two seconds. Runs with the attendees' environment's Python (it has jupyterhub, tornado and
vnetlab, whose exercises give each exercise's question and hint).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from pathlib import Path
from urllib.parse import urlparse

from jupyterhub.services.auth import HubOAuth, HubOAuthCallbackHandler, HubOAuthenticated
from jupyterhub.utils import url_path_join
from tornado import httpclient, ioloop, web

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import reset  # noqa: E402
import store  # noqa: E402

log = logging.getLogger("vnetlab-board")
MAX_BODY = 256 << 10  # a post of MAX_EVENTS_PER_POST lines fits; larger is not a kernel's report
USERS_EVERY_S = 5  # how often the hub's user list (who has a server) is refreshed


def exercise_meta() -> dict[str, dict]:
    from vnetlab import exercises

    return {k: {"question": e.question, "hint": e.hint, "notebook": k.split(".")[0]}
            for k, e in exercises.EXERCISES.items()}


class Board:
    """The service's state: the store, the exercises, the hub's list of attendees."""

    def __init__(self, db: Path, admin_names: set[str], stuck_after_s: float) -> None:
        self.store = store.Store(db)
        self.known = exercise_meta()
        self.users: list[dict] = []
        self.admin_names = admin_names
        self.stuck_after_s = stuck_after_s
        self.hub_api = os.environ["JUPYTERHUB_API_URL"]
        self.token = os.environ["JUPYTERHUB_API_TOKEN"]
        self.received = 0  # events taken since start (the board's own counter, for the load test)

    async def refresh_users(self) -> None:
        """The hub's users (attendees: not admins) and whether each has a server running."""
        client = httpclient.AsyncHTTPClient()
        while True:
            try:
                resp = await client.fetch(url_path_join(self.hub_api, "users") + "?limit=1000",
                                          headers={"Authorization": f"token {self.token}"}, request_timeout=10)
                users = json.loads(resp.body)
                users = users["items"] if isinstance(users, dict) else users
                self.users = [{"name": u["name"], "server": ("ready" if u.get("servers", {}).get("", {}).get("ready")
                                                             else "starting" if u.get("pending") else "stopped"),
                               "last_activity": u.get("last_activity")}
                              for u in users if not u.get("admin") and u["name"] not in self.admin_names]
            except Exception as exc:  # noqa: BLE001 - the hub restarting: keep the last list
                log.warning("could not list the hub's users: %s", exc)
            await asyncio.sleep(USERS_EVERY_S)


class Page(HubOAuthenticated, web.RequestHandler):
    def initialize(self, board: Board) -> None:
        self.board = board

    @web.authenticated
    def get(self) -> None:
        html = (HERE / "board.html").read_text(encoding="utf-8")
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.set_header("Cache-Control", "no-store")
        self.write(html.replace("{{xsrf}}", self.xsrf_token.decode()).replace("{{user}}",
                                                                              self.current_user["name"]))


class State(HubOAuthenticated, web.RequestHandler):
    def initialize(self, board: Board) -> None:
        self.board = board

    def get_login_url(self) -> str:
        raise web.HTTPError(403)  # an API answers 403, never a redirect to the login page

    @web.authenticated
    def get(self) -> None:
        b = self.board
        out = b.store.summary(b.known, b.users, b.stuck_after_s)
        out["notebooks"] = reset.notebooks()
        out["received"] = b.received
        self.set_header("Cache-Control", "no-store")
        self.write(out)


class Reset(State):
    @web.authenticated
    async def post(self) -> None:
        try:
            body = json.loads(self.request.body or b"{}")
            done = await asyncio.to_thread(reset.reset_notebook, body.get("attendee"), body.get("notebook"))
        except (ValueError, reset.ResetError) as exc:
            raise web.HTTPError(400, reason=str(exc)[:200]) from None
        log.info("reset by %s: %s", self.current_user["name"], done)
        self.write(done)


class Events(web.RequestHandler):
    """A kernel's reported checks; the poster is whoever the hub says the token belongs to."""

    def initialize(self, board: Board, hub_auth: HubOAuth) -> None:
        self.board, self.hub_auth = board, hub_auth

    def check_xsrf_cookie(self) -> None:
        pass  # token-authenticated: no cookie is accepted here, so there is nothing to forge

    async def post(self) -> None:
        auth = self.request.headers.get("Authorization", "")
        token = auth[6:].strip() if auth.lower().startswith("token ") else ""
        if not token:
            raise web.HTTPError(403)
        user = await self.hub_auth.user_for_token(token, sync=False)
        if not user or user.get("kind", "user") != "user":
            raise web.HTTPError(403)
        if len(self.request.body) > MAX_BODY:
            raise web.HTTPError(413)
        if user.get("admin") or user["name"] in self.board.admin_names:
            self.write({"accepted": 0})  # the instructor's demonstrations are not the room's answers
            return
        try:
            events = json.loads(self.request.body)["events"]
            new = self.board.store.add(user["name"], events, set(self.board.known))
        except (ValueError, KeyError, TypeError, store.EventError) as exc:
            raise web.HTTPError(400, reason=str(exc)[:200]) from None
        self.board.received += new
        self.write({"accepted": new})


def make_app(board: Board, prefix: str) -> web.Application:
    hub_auth = HubOAuth.instance(cache_max_age=60)  # the one HubOAuthenticated and the callback use too
    routes = [
        (prefix, Page, {"board": board}),
        (url_path_join(prefix, "api/state"), State, {"board": board}),
        (url_path_join(prefix, "api/reset"), Reset, {"board": board}),
        (url_path_join(prefix, "api/events"), Events, {"board": board, "hub_auth": hub_auth}),
        (url_path_join(prefix, "oauth_callback"), HubOAuthCallbackHandler),
    ]
    return web.Application(routes, hub_auth=hub_auth, cookie_secret=os.urandom(32), xsrf_cookies=False)


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="[board %(asctime)s] %(message)s")
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/services/board/")
    url = urlparse(os.environ["JUPYTERHUB_SERVICE_URL"])
    db = Path(os.environ.get("VNETLAB_BOARD_DB", "board.sqlite"))
    admins = set(filter(None, os.environ.get("VNETLAB_BOARD_ADMINS", "").split(",")))
    board = Board(db, admins, float(os.environ.get("VNETLAB_BOARD_STUCK_S", "600")))
    log.info("%s: %d events from %s rebuilt", prefix, board.store.loaded, db)
    app = make_app(board, prefix)
    app.listen(url.port, url.hostname, xheaders=True, max_body_size=MAX_BODY)
    loop = ioloop.IOLoop.current()
    loop.add_callback(board.refresh_users)
    loop.start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
