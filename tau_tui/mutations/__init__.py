"""Cluster changes the panes ask for, as :class:`~tau_tui.mutations.mutation.Mutation`
objects the app previews, confirms, applies and audits.

Both the screens (which build them) and the app (which runs them) import this
package; it imports only the core, never a screen or the app."""
