"""The failclass HTTP service: a FastAPI app built by ``failclass.service.app.create_app``."""
