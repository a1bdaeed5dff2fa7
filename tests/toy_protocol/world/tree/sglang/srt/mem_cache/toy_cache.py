"""A toy hierarchical cache, shaped like SGLang's (written for prefetch-check's tests, not copied):
the scheduler admits a request once its prefetch says every page is loaded."""


class ToyCache:
    def __init__(self, cache_controller):
        self.cache_controller = cache_controller
        self.ongoing_prefetch = {}

    def prefetch_from_storage(self, request_id, pages):
        operation = self.cache_controller.prefetch(request_id, pages)
        self.ongoing_prefetch[request_id] = operation
        return operation

    def can_terminate_prefetch(self, operation):
        return operation.completed_pages == operation.pages

    def check_prefetch_progress(self, request_id):
        operation = self.ongoing_prefetch[request_id]
        if not self.can_terminate_prefetch(operation):
            return False
        del self.ongoing_prefetch[request_id]
        return True
