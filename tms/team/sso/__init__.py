"""Single sign-on with OpenID Connect, per tenant: settings, the authorization code flow, provisioning."""
