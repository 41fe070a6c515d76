// Placeholder until the engine lands: replaced by the local cluster launcher.
console.log('islet devstack: not built yet');
