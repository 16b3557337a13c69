"""Example input channels that fill channel metadata with entitlements a user cannot forge."""
