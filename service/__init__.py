"""The failclass HTTP service: a FastAPI app built by ``service.app.create_app``."""
