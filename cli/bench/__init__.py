"""The harnesses behind `memdir bench`: benchmarks that drive memdir's own pipeline over
throwaway memdirs (`locomo`: retrieval on LoCoMo conversations; `safety`: the safeguards
against an unrestricted ablation). They sit beside the use cases, not among them: the product
never calls them, and they may import any layer.
"""
