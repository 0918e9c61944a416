_base_ = ['plain_dataset.py', 'hf_base_model.py']

datasets = [*_base_.demo_datasets]
