"""Methods of the builtin, standard-library and torch types a call on an unknown receiver is taken
to be (path_code.py): `x.append(...)` on a value the path cannot type is a list's, not a reason
to fingerprint every srt file defining `append` whole.

A literal list, not `dir()`: the path, and so the shipped fingerprints, must not depend on which
Python builds them. The list names what it covers; a name missing here only over-refuses.
"""

BUILTIN_METHODS = frozenset({
    # list, tuple, dict, set, frozenset, deque, OrderedDict, defaultdict, Counter
    'add', 'append', 'appendleft', 'clear', 'copy', 'count', 'default_factory', 'difference',
    'difference_update', 'discard', 'elements', 'extend', 'extendleft', 'fromkeys', 'get', 'index',
    'insert', 'intersection', 'intersection_update', 'isdisjoint', 'issubset', 'issuperset', 'items',
    'keys', 'maxlen', 'most_common', 'move_to_end', 'pop', 'popitem', 'popleft', 'remove', 'reverse',
    'rotate', 'setdefault', 'sort', 'subtract', 'symmetric_difference', 'symmetric_difference_update',
    'total', 'union', 'update', 'values',
    # str, bytes, bytearray, int, float
    'append', 'as_integer_ratio', 'bit_count', 'bit_length', 'capitalize', 'casefold', 'center', 'clear',
    'conjugate', 'copy', 'count', 'decode', 'denominator', 'encode', 'endswith', 'expandtabs', 'extend',
    'find', 'format', 'format_map', 'from_bytes', 'fromhex', 'hex', 'imag', 'index', 'insert', 'is_integer',
    'isalnum', 'isalpha', 'isascii', 'isdecimal', 'isdigit', 'isidentifier', 'islower', 'isnumeric',
    'isprintable', 'isspace', 'istitle', 'isupper', 'join', 'ljust', 'lower', 'lstrip', 'maketrans',
    'numerator', 'partition', 'pop', 'real', 'remove', 'removeprefix', 'removesuffix', 'replace', 'reverse',
    'rfind', 'rindex', 'rjust', 'rpartition', 'rsplit', 'rstrip', 'split', 'splitlines', 'startswith',
    'strip', 'swapcase', 'title', 'to_bytes', 'translate', 'upper', 'zfill',
    # queue.Queue, threading's Event, Lock, RLock, Condition, Thread, Semaphore, concurrent Future
    'acquire', 'acquire_lock', 'add_done_callback', 'cancel', 'cancelled', 'clear', 'daemon', 'done',
    'empty', 'exception', 'full', 'get', 'getName', 'get_nowait', 'ident', 'isDaemon', 'isSet', 'is_alive',
    'is_set', 'join', 'locked', 'locked_lock', 'name', 'native_id', 'notify', 'notifyAll', 'notify_all',
    'put', 'put_nowait', 'qsize', 'release', 'release_lock', 'result', 'run', 'running', 'set', 'setDaemon',
    'setName', 'set_exception', 'set_result', 'set_running_or_notify_cancel', 'start', 'task_done', 'wait',
    'wait_for',
    # logging.Logger
    'addFilter', 'addHandler', 'callHandlers', 'critical', 'debug', 'error', 'exception', 'fatal', 'filter',
    'findCaller', 'getChild', 'getEffectiveLevel', 'handle', 'hasHandlers', 'info', 'isEnabledFor', 'log',
    'makeRecord', 'manager', 'removeFilter', 'removeHandler', 'root', 'setLevel', 'warn', 'warning',
    # torch.Tensor, torch.cuda.Stream/Event, torch.distributed work handles
    'abs', 'add', 'all', 'all_gather', 'all_reduce', 'any', 'argmax', 'argmin', 'barrier', 'bool',
    'broadcast', 'chunk', 'clamp', 'clamp_', 'clone', 'contiguous', 'copy', 'copy_', 'cpu', 'cuda',
    'cumsum', 'data_ptr', 'detach', 'dim', 'div', 'elapsed_time', 'element_size', 'eq', 'expand',
    'expand_as', 'fill_', 'flatten', 'flip', 'float', 'floor_divide', 'gather', 'ge', 'gt', 'half',
    'index_copy_', 'index_fill_', 'index_put_', 'index_select', 'int', 'is_contiguous', 'is_pinned', 'item',
    'le', 'long', 'lt', 'masked_fill_', 'masked_select', 'max', 'mean', 'min', 'mul', 'narrow', 'nbytes',
    'ne', 'neg', 'new_empty', 'new_full', 'new_ones', 'new_tensor', 'new_zeros', 'nonzero', 'numel',
    'numpy', 'permute', 'pin_memory', 'query', 'record', 'record_stream', 'remainder', 'repeat',
    'repeat_interleave', 'reshape', 'resize_', 'scatter_', 'scatter_add_', 'size', 'sort', 'split',
    'squeeze', 'std', 'storage', 'stride', 'sub', 'sum', 'synchronize', 't', 'tensor_split', 'to', 'tolist',
    'topk', 'transpose', 'type', 'type_as', 'unique', 'unsqueeze', 'untyped_storage', 'view', 'view_as',
    'wait', 'wait_stream', 'zero_',
})
