"""Signing in: the TOTP second factor and recovery codes (django-otp), lockout (django-axes), session
limits, password rules and the sign-in audit events. Staff must hold a confirmed authenticator; a
participant may add one."""
