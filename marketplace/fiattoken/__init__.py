"""Circle's FiatToken (the code real USDC runs), built and deployed for tests and benchmarks only.

The project ships none of Circle's code: ``build`` compiles it from ``../shared/usdc`` beside the
repository with solc-js from npm, caching the result outside the repository, and ``deploy`` puts the
token, proxy and all, on a development chain. The daemon never imports this package.
"""
