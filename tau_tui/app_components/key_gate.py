"""Every key reaches what has the focus once it is there, in the order it was typed.

Textual hands a printable key to the focused widget at once, but a bound key (backspace, enter,
the arrows, a pane's letters) travels up through the queue of every widget above it before the
app runs its binding (Textual issue #6605).  Keys that arrive together, as a paste, a fast typist
or a busy machine deliver them, then overtake each other: five backspaces and ``STEPS=42`` typed
into ``A=1`` left ``A=1STE``.  Likewise a key that opens or closes a dialog, switches a pane or
submits the command line changes where the next key must go only once its messages have been
handled, and the next key used to be routed before that.

So the app delivers one key at a time, as a terminal's line discipline would.  A key is done when
a trail message posted right behind it has followed it through every queue it went through and
reached the app, and then the app's own queue has run what the key asked of it (a focus change is
a callback there).  A second trail then goes the way the next key would go (the focus as it is
now): it arrives after whatever the key posted on that way (the command line's submit, a screen's
resume and mount) has been handled.  While a trail changes which screen or widget has the focus,
one more follows.  Keys typed meanwhile wait in order.  A character typed into a text field needs no
trail: the field inserts it at once, in its own queue, where the keys after it follow it.

Nothing here waits for time: a trail is a message, so the gate opens as soon as the queues are
through.  A trail can be lost only with the widget it was in (a closed dialog): the watch below
sees that its widget is gone and opens the gate."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import App, ScreenStackError
from textual.message import Message
from textual.widgets import Input, TextArea

if TYPE_CHECKING:
    from textual.dom import DOMNode
    from textual.timer import Timer

#: Trails one key may send before the gate opens anyway (each one after the first follows a change
#: of the focused screen or widget; more than this is a loop of focus changes, not a key's effect).
MOST_TRAILS_PER_KEY = 6
#: How often a trail still on its way is looked after (whether the widget it was posted to is gone).
TRAIL_WATCH_S = 0.25


class KeyTrail(Message, bubble=True, verbose=True):
    """Posted behind a key, to the widget the key went to; bubbles up to the app."""

    def __init__(self, trail: int) -> None:
        super().__init__()
        self.trail = trail


def typed_into_text(event: events.Event, target: DOMNode | None) -> bool:
    """Whether ``event`` is text that the text field ``target`` inserts itself."""
    if not isinstance(target, (Input, TextArea)) or target.disabled:
        return False
    if isinstance(target, TextArea) and target.read_only:  # its keys go on to the bindings
        return False
    if isinstance(event, events.Paste):
        return True
    return isinstance(event, events.Key) and event.is_printable


class KeyGate:
    """Holds each key (and paste) the terminal sends until the one before it is done."""

    def __init__(self, app: App[Any]) -> None:
        self.app = app
        self.waiting: deque[events.Event] = deque()
        #: The key being delivered, or None when the gate is open.
        self.in_flight: events.Event | None = None
        self._trail = 0
        self._trails_for_key = 0
        #: The widget the trail on its way was posted to, and the focus when it was posted.
        self._trail_node: DOMNode | None = None
        self._focus_before: tuple[object, object] = (None, None)
        self._watch: Timer | None = None
        # Counts, for tests and the benchmarks: keys delivered, keys that waited for one before them,
        # trails sent, and trails given up because their widget went away.
        self.delivered = 0
        self.held = 0
        self.trails = 0
        self.trails_lost = 0

    @staticmethod
    def takes(event: events.Event) -> bool:
        """Whether ``event`` is typed input fresh from the terminal (not one the app forwards)."""
        return isinstance(event, (events.Key, events.Paste)) and not event.is_forwarded

    async def arrived(self, event: events.Event) -> None:
        """A key or paste from the terminal: delivered now if nothing is on its way, else queued."""
        if self.in_flight is not None or self.waiting:
            self.held += 1
            self.waiting.append(event)
            return
        await self._deliver(event)

    async def _deliver(self, event: events.Event) -> None:
        app = self.app
        self.in_flight = event
        self.delivered += 1
        self._trails_for_key = 0
        focus_before = self._focus()
        target = self._focus_target()  # where Textual's own routing forwards it
        try:
            await App.on_event(app, event)  # Textual's routing: priority bindings, else the focused widget
        finally:
            if event.is_forwarded and typed_into_text(event, target):
                # A character (or paste) for a text field is inserted by the field itself, in its own
                # queue, where the keys after it will follow it; it moves no focus.
                self._key_done()
            else:
                # Forwarded: the trail follows the key from where it went.  Taken by a priority binding
                # at the app: what it changed is checked by a trail along the focus as it is now.
                self._send_trail(target if event.is_forwarded else None, focus_before)

    def _focus(self) -> tuple[object, object]:
        try:
            return (self.app.screen, self.app.focused)
        except ScreenStackError:  # the app is ending
            return (None, None)

    def _focus_target(self) -> DOMNode | None:
        try:
            return self.app.focused or self.app.screen
        except ScreenStackError:
            return None

    def _send_trail(self, target: DOMNode | None, focus_before: tuple[object, object]) -> None:
        app = self.app
        node = target or self._focus_target()
        if node is None:  # no screen left: nothing to wait for
            self._key_done()
            return
        self._trail += 1
        self._trails_for_key += 1
        self.trails += 1
        self._trail_node = node
        self._focus_before = focus_before
        if not node.post_message(KeyTrail(self._trail)):  # closing: the key went nowhere either
            self._trail_node = None
            app.call_later(self._trail_through, self._trail)
            return
        if self._watch is None:
            self._watch = app.set_interval(TRAIL_WATCH_S, self._look_after_trail, name="key-trail-watch")

    def trail_arrived(self, message: KeyTrail) -> None:
        """At the app: the key and all it posted on its way are handled.  What the app was asked to
        run meanwhile (a focus change is a callback) is queued before this, so it runs first."""
        message.stop()
        if message.trail == self._trail:
            self._trail_node = None
            self.app.call_later(self._trail_through, message.trail)

    def _trail_through(self, trail: int) -> None:
        if trail != self._trail or self.in_flight is None:
            return
        now = self._focus()
        # The first trail only followed the key; the next goes where the next key would go.  A trail
        # that saw the focus move sends one more, until the focus stays (or the cap is reached).
        if self._trails_for_key == 1 or (now != self._focus_before and self._trails_for_key < MOST_TRAILS_PER_KEY):
            self._send_trail(None, now)
            return
        self._key_done()

    def _key_done(self) -> None:
        self.in_flight = None
        if self.waiting:
            self.app.call_later(self._deliver_next)

    async def _deliver_next(self) -> None:
        if self.in_flight is None and self.waiting:
            await self._deliver(self.waiting.popleft())

    def _look_after_trail(self) -> None:
        """A trail whose widget has gone (a dialog closed under it) never arrives: open the gate."""
        node = self._trail_node
        if self.in_flight is None:
            if self._watch is not None:
                self._watch.stop()
                self._watch = None
            return
        if node is not None and not node.is_attached:
            self.trails_lost += 1
            self._trail_node = None
            self.app.call_later(self._trail_through, self._trail)
