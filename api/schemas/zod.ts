import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// `.openapi()` on every schema needs this once, before any schema module is evaluated.
extendZodWithOpenApi(z);

export { z };
