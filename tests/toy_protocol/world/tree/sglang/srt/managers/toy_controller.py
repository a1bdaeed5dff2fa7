"""A toy cache controller, shaped like SGLang's (written for prefetch-check's tests, not copied):
its prefetch thread reads a request's pages from storage one by one into host memory."""


class ToyOperation:
    def __init__(self, request_id, pages):
        self.request_id = request_id
        self.pages = pages
        self.completed_pages = 0


class ToyCacheController:
    def __init__(self, storage_backend):
        self.storage_backend = storage_backend

    def prefetch(self, request_id, pages):
        return ToyOperation(request_id, pages)

    def prefetch_thread_func(self, operation):
        while operation.completed_pages < operation.pages:
            self.storage_backend.get(operation.request_id, operation.completed_pages)
            operation.completed_pages += 1
